#pragma once
// A kernel that only reads: the streaming-read ceiling measures it, and the L2 flush uses it to
// evict the cache without leaving dirty lines behind.
#include <cstddef>

#include <cuda_runtime_api.h>

namespace rooflab {

// Reads `bytes` (a multiple of 16) from `data` (16-byte aligned) with every SM busy and keeps
// nothing: `sink` (one device word) is written only if the data folds to a value random data never
// gives, so the compiler cannot drop the loads. Checks the launch.
void stream_read(const void* data, std::size_t bytes, unsigned* sink, cudaStream_t stream);

}  // namespace rooflab
