#pragma once
// Candidate forms of the production scan, measured by the lab next to rooflab::inclusive_scan
// (src/scan/ladder.cu): not part of the public API. Instantiated for float and int32_t.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace rooflab::detail {

// rooflab::inclusive_scan with tiles of 16 warps x 8 rows (16384 4-byte elements, 512 threads,
// 2 blocks an SM) instead of 8 warps x 8 rows.
template <class T>
void inclusive_scan_16k_tiles(const T* in, T* out, std::int64_t n, cudaStream_t stream);

}  // namespace rooflab::detail
