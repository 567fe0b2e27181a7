#include "core/worker_pool.hpp"

namespace rooflab {

WorkerPool::WorkerPool(int threads) {
  threads_.reserve(std::size_t(threads > 0 ? threads : 0));
  for (int worker = 1; worker <= threads; ++worker)
    threads_.emplace_back([this, worker] { serve(worker); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void WorkerPool::take_indices(std::unique_lock<std::mutex>& lock, int worker) {
  ++running_;
  while (next_ < count_ && !error_) {
    const int index = next_++;
    lock.unlock();
    std::exception_ptr thrown;
    try {
      (*task_)(index, worker);
    } catch (...) {
      thrown = std::current_exception();
    }
    lock.lock();
    if (thrown && !error_) error_ = thrown;
  }
  if (--running_ == 0) done_.notify_all();
}

// A thread of the pool: each new run wakes it, and it takes indices with the others. One that
// wakes after its run has ended finds nothing left and goes back to sleep.
void WorkerPool::serve(int worker) {
  std::unique_lock<std::mutex> lock(mutex_);
  std::uint64_t served = 0;
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || generation_ != served; });
    if (stopping_) return;
    served = generation_;
    take_indices(lock, worker);
  }
}

void WorkerPool::run(int count, const std::function<void(int, int)>& task) {
  std::lock_guard<std::mutex> turn(turn_);
  std::unique_lock<std::mutex> lock(mutex_);
  task_ = &task;
  count_ = count;
  next_ = 0;
  error_ = nullptr;
  ++generation_;
  wake_.notify_all();
  take_indices(lock, 0);
  done_.wait(lock, [&] { return running_ == 0; });
  // Nothing left to take for a thread that wakes late (a call that threw leaves indices).
  count_ = next_ = 0;
  task_ = nullptr;
  const std::exception_ptr error = error_;
  error_ = nullptr;
  lock.unlock();
  if (error) std::rethrow_exception(error);
}

}  // namespace rooflab
