#pragma once
// Host threads kept for the process, that run the independent pieces of one call side by side with
// the calling thread (svd_batched's second tries: svd_batched.cu says why threads). Plain C++.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rooflab {

class WorkerPool {
 public:
  // `threads` threads besides the callers' (none: every call runs on the calling thread).
  explicit WorkerPool(int threads);
  ~WorkerPool();  // lets running calls end, then joins the threads
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return int(threads_.size()); }

  // Calls task(i, worker) once for every i in [0, count), on the pool's threads (worker 1 ..
  // threads()) and on the calling thread (worker 0) together, and returns when every call has
  // returned. After a call throws, no other starts; the first exception is rethrown here once the
  // calls under way have returned. Callers on several threads take turns.
  void run(int count, const std::function<void(int index, int worker)>& task);

 private:
  // Takes indices until none is left or a call has thrown; the lock is held on entry and return.
  void take_indices(std::unique_lock<std::mutex>& lock, int worker);
  void serve(int worker);

  std::mutex turn_;  // one run at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int, int)>* task_ = nullptr;
  int count_ = 0, next_ = 0, running_ = 0;
  std::uint64_t generation_ = 0;  // one more for every run
  bool stopping_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace rooflab
