#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tropical::jit {

/// A bounded pool of worker threads for the tuned compiles of first use.
/// Workers start on demand, up to the bound, and then wait for more work.
/// The destructor drops jobs not yet started and joins the workers (so it
/// waits for the jobs running). All members are thread-safe.
class BackgroundPool {
 public:
  /// A pool of at most `max_threads` workers (0: one per spare core, at least 1).
  explicit BackgroundPool(unsigned max_threads = 0);
  ~BackgroundPool();
  BackgroundPool(const BackgroundPool&) = delete;
  BackgroundPool& operator=(const BackgroundPool&) = delete;

  /// Queues `job` (which must not throw); false if no worker runs and none can
  /// be started (then the caller should do the work itself).
  bool submit(std::function<void()> job);

  /// The bound on workers.
  unsigned max_threads() const;

  /// Workers started so far.
  unsigned threads() const;

 private:
  void work();

  unsigned bound() const;  // max_threads(), the mutex held

  // 0 until first needed: counting the cores reads /sys, which a process that
  // never compiles in the background should not pay for at start-up.
  mutable unsigned max_threads_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  unsigned idle_ = 0;
  bool stopping_ = false;
};

}  // namespace tropical::jit
