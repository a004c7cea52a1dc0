#include "tropical/storage/promotion.hpp"

#include <unistd.h>

#include <system_error>
#include <utility>

#include "tropical/storage/exit_guard.hpp"

namespace tropical::storage {

struct Promotions::Job {
  CacheKey key;
  std::string serialized;
  std::string digest;
  CompiledImage image;
  std::vector<Store*> into;
  Store* from;  // non-null: image is empty, read the whole entry from here first
  // Held from the queueing to the end of the write: the process's exit waits for it.
  exit_guard::Scope scope;
};

Promotions::Promotions(LogLevel log) noexcept : log_(log) {}

Promotions::~Promotions() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  if (worker_ == nullptr) return;
  if (owner_ == ::getpid()) {
    worker_->join();
  } else {
    (void)worker_.release();  // the parent's thread, which does not exist in this process
  }
}

void Promotions::write(Job& job) const noexcept {
  try {
    const StoreKey key(job.key, std::move(job.serialized), std::move(job.digest));
    const std::string kernel = job.key.kernel_name + " sm_" + std::to_string(job.key.arch);
    if (job.from != nullptr) {
      // Gone or damaged (a bad PTX the caller did not read): nothing to copy; the next process reads the
      // store again, and `tropical warm`, which reads entries whole, compiles it into the primary.
      Lookup whole = job.from->reread(key);
      if (!whole.image) {
        log_line(log_, LogLevel::kInfo,
                 kernel + ": not copied from " + job.from->name() + ": " +
                     (whole.detail.empty() ? std::string("entry gone") : whole.detail));
        return;
      }
      job.image = std::move(*whole.image);
    }
    for (Store* store : job.into) {
      if (store->can_store() && store->store(key, job.image, StoreReason::kPromoted)) {
        log_line(log_, LogLevel::kInfo, kernel + ": copied into " + store->name());
        store->after_store(key);
      }
    }
  } catch (...) {
    // Out of memory: the copy is dropped; the next process reads the lower store again.
  }
}

void Promotions::copy(const StoreKey& key, CompiledImage image, std::vector<Store*> into) noexcept {
  try {
    queue(std::unique_ptr<Job>(new Job{key.key, key.serialized, key.digest, std::move(image), std::move(into),
                                       nullptr, {}}));
  } catch (...) {
    // out of memory: no copy this time
  }
}

void Promotions::copy_from(const StoreKey& key, Store* from, std::vector<Store*> into) noexcept {
  try {
    queue(std::unique_ptr<Job>(new Job{key.key, key.serialized, key.digest, {}, std::move(into), from, {}}));
  } catch (...) {
    // out of memory: no copy this time
  }
}

void Promotions::queue(std::unique_ptr<Job> job) noexcept {
  if (job->scope) {
    std::unique_lock lock(mutex_);
    if (owner_ != ::getpid()) {
      // Forked: the parent's worker and what it was writing do not exist here.
      (void)worker_.release();
      owner_ = 0;
      running_ = 0;
    }
    if (worker_ == nullptr && !stopping_) {
      try {
        // Armed before the first copy is queued: from now on, exit waits for the queue.
        exit_guard::arm(exit_guard::After::kPromotion);
        worker_ = std::make_unique<std::thread>([this] { run(); });
        owner_ = ::getpid();
      } catch (...) {
        worker_.reset();  // no thread (RLIMIT_NPROC, EAGAIN): the caller writes
      }
    }
    if (worker_ != nullptr && !stopping_ && jobs_.size() < kMaxQueued) {
      jobs_.push_back(std::move(job));
      lock.unlock();
      work_.notify_one();
      return;
    }
  }
  write(*job);
}

bool Promotions::wait(std::chrono::milliseconds bound) {
  std::unique_lock lock(mutex_);
  return idle_.wait_for(lock, bound, [this] { return jobs_.empty() && running_ == 0; });
}

void Promotions::run() noexcept {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and every queued copy is written
    std::unique_ptr<Job> job = std::move(jobs_.front());
    jobs_.pop_front();
    ++running_;
    lock.unlock();
    write(*job);
    job.reset();  // leaves the exit guard's scope
    lock.lock();
    --running_;
    if (jobs_.empty() && running_ == 0) idle_.notify_all();
  }
}

}  // namespace tropical::storage
