#pragma once
// Scratch memory that one-pass kernels keep between calls, one set per device and stream, so that a
// call needs neither an allocation nor a memset on the device's timeline: the library's answer to
// "the last block finishes through an atomic ticket" without paying to zero the ticket each time.
//
// The contract: `counters` are zero whenever no kernel using them is running, so every kernel that
// counts in them sets what it counted back to zero before it ends (the last block to arrive resets
// its ticket). Work on one stream runs in order, so two calls on the same stream never share the
// scratch at the same time; calls on different streams get different scratch.
#include <cuda_runtime_api.h>

#include <cstddef>

namespace rooflab::detail {

struct StreamScratch {
  void* bytes = nullptr;  // at least the requested bytes, 256-byte aligned, contents undefined
  unsigned* counters = nullptr;  // at least the requested counters, all zero
};

// Scratch for kernels queued on `stream` of the current device. The first call for a stream, and a
// call that needs more than the stream has, allocate (stream-ordered) and zero new counters on the
// stream; later calls only look the scratch up. Outgrown buffers are kept, not freed: a kernel
// queued earlier may still use them. Nothing is ever released (one small set per stream used),
// so capture a stream into a CUDA graph only after a first, uncaptured call on it.
StreamScratch stream_scratch(std::size_t bytes, std::size_t counters, cudaStream_t stream,
                             const char* op);

}  // namespace rooflab::detail
