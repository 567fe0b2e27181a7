#pragma once
// A candidate form of the production scan, measured by the lab next to rooflab::inclusive_scan
// (src/scan/ladder.cu): not part of the public API. Instantiated for float and int32_t.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace rooflab::detail {

// rooflab::inclusive_scan with tiles taken in blockIdx.x order instead of from the ticket counter.
template <class T>
void inclusive_scan_in_block_order(const T* in, T* out, std::int64_t n, cudaStream_t stream);

}  // namespace rooflab::detail
