#pragma once
// Scratch memory that one-pass kernels keep between calls, so that a call needs neither an
// allocation nor a memset on the device's timeline: the library's answer to "the last block
// finishes through an atomic ticket" without paying to zero the ticket each time (a
// cudaMemsetAsync before every launch cost the reduce ladder's rung 16 tens of microseconds).
//
// The contract: `counters` are zero whenever no kernel using them is running, so every kernel that
// counts in them sets what it counted back to zero before it ends (the last block to arrive resets
// its ticket). Work on one stream runs in order, so two calls on the same stream never share the
// scratch at the same time; calls on different streams get different scratch.
//
// Bounded: each device keeps scratch for at most `stream_scratch_slots` streams. A call from
// another stream then takes over the slot of the stream that called least recently, after
// ordering itself (cudaStreamWaitEvent) behind the last kernel that used it, so streams that were
// destroyed long ago hold nothing for ever. Inside a stream capture the graph gets scratch of its
// own instead (stream-ordered allocation and memset nodes), so a graph never shares a slot.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "rooflab/device_buffer.hpp"

namespace rooflab::detail {

// Streams per device that keep their scratch; each slot holds a few KiB (a partial per block and
// a ticket per row of the largest call so far).
constexpr std::size_t stream_scratch_slots = 64;

// Scratch for the kernels one call queues on `stream` of the current device: construct it, queue
// the kernels, then let it go out of scope (its destructor records that the slot's last use is
// the work queued so far). No scratch at all when both sizes are zero.
class StreamScratch {
 public:
  StreamScratch(std::size_t bytes, std::size_t counters, cudaStream_t stream, const char* op);
  ~StreamScratch();
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;

  void* bytes() const noexcept { return bytes_; }            // 256-byte aligned, contents undefined
  unsigned* counters() const noexcept { return counters_; }  // all zero

 private:
  void* bytes_ = nullptr;
  unsigned* counters_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int device_ = -1;
  int slot_ = -1;                      // the leased slot of device_, or -1
  std::unique_ptr<StreamBuffer> own_;  // scratch of this call's own, where it has no slot
};

// Slots in use on the current device (for tests of the bound).
std::size_t stream_scratch_slots_in_use();

}  // namespace rooflab::detail
