#pragma once
// The blocks per SM that a kernel's __launch_bounds__ asks for, within what the SM of the
// architecture being compiled can hold: a kernel tuned for 8 blocks of 256 threads on Hopper gets
// 4 on Turing instead of an ignored hint (and a ptxas warning).

namespace rooflab::detail {

// Threads one SM holds: 1024 on Turing (sm_75), 1536 on sm_86, sm_89 and sm_120, 2048 on sm_80,
// sm_90 and sm_100. The host pass, which does not compile device code, sees the most.
constexpr int max_threads_per_sm() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750
  return 1024;
#elif defined(__CUDA_ARCH__) && \
    (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 890 || __CUDA_ARCH__ >= 1200)
  return 1536;
#else
  return 2048;
#endif
}

// `wanted` blocks of `threads` threads per SM, or as many as fit.
constexpr int min_blocks_per_sm(int threads, int wanted) {
  return wanted * threads <= max_threads_per_sm() ? wanted : max_threads_per_sm() / threads;
}

}  // namespace rooflab::detail
