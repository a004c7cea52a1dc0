#include "tropical/jit/background.hpp"

#include <algorithm>
#include <system_error>

namespace tropical::jit {

BackgroundPool::BackgroundPool(unsigned max_threads) : max_threads_(max_threads) {}

unsigned BackgroundPool::bound() const {
  if (max_threads_ == 0) {
    const unsigned cores = std::thread::hardware_concurrency();  // 0 when unknown
    max_threads_ = cores > 1 ? cores - 1 : 1;
  }
  return max_threads_;
}

unsigned BackgroundPool::max_threads() const {
  std::lock_guard lock(mutex_);
  return bound();
}

BackgroundPool::~BackgroundPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    jobs_.clear();
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

bool BackgroundPool::submit(std::function<void()> job) {
  std::unique_lock lock(mutex_);
  if (stopping_) return false;
  jobs_.push_back(std::move(job));
  if (idle_ < jobs_.size() && workers_.size() < bound()) {
    try {
      workers_.emplace_back([this] { work(); });
    } catch (const std::system_error&) {
      // Out of threads (RLIMIT_NPROC, EAGAIN): the workers there are take it.
      if (workers_.empty()) {
        jobs_.pop_back();
        return false;
      }
    }
  }
  lock.unlock();
  wake_.notify_one();
  return true;
}

unsigned BackgroundPool::threads() const {
  std::lock_guard lock(mutex_);
  return static_cast<unsigned>(workers_.size());
}

void BackgroundPool::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    ++idle_;
    wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    --idle_;
    if (stopping_) return;
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

}  // namespace tropical::jit
