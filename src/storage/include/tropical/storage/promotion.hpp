#pragma once

#include <chrono>
#include <sys/types.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tropical/storage/image.hpp"
#include "tropical/storage/log.hpp"
#include "tropical/storage/store.hpp"

namespace tropical::storage {

/// Copies of a lower store's hit (a read-only layer, the remote) into the writable stores above it, written on
/// one background thread so that the first use the hit serves does not wait for the write (a whole entry,
/// ~0.2 MB, into a new file, then a rename and the eviction pass: most of a layer hit's time), nor, from a
/// store that can be read again (a layer), for the read of the PTX that only the copy needs. The copy is
/// the one the walk would have written, with the same checks; the worker starts on the first copy, and the
/// process's exit waits for every copy queued (at most exit_guard::kWaitSeconds), so a short-lived process
/// still leaves its hits promoted. Where no worker can run (the queue is full, no thread can start, the
/// process is exiting) the copy is written on the calling thread. Thread-safe; never throws.
class Promotions {
 public:
  /// At most this many copies wait at a time (each holds its image); more are written by the caller.
  static constexpr std::size_t kMaxQueued = 32;

  explicit Promotions(LogLevel log) noexcept;
  /// Writes what is still queued, then stops the worker.
  ~Promotions();
  Promotions(const Promotions&) = delete;
  Promotions& operator=(const Promotions&) = delete;

  /// Stores image (whole: CUBIN and PTX) under key in each store of into that can store, then runs its
  /// after_store(); in the background when it can. The stores must outlive this object.
  void copy(const StoreKey& key, CompiledImage image, std::vector<Store*> into) noexcept;

  /// The same for a hit of `from` (rereadable()) that the caller read in part: the copier reads the
  /// whole entry again with from->reread() and copies it if it is still there and sound.
  void copy_from(const StoreKey& key, Store* from, std::vector<Store*> into) noexcept;

  /// Waits until every copy queued before the call is written, at most `bound`; false if the bound passed.
  bool wait(std::chrono::milliseconds bound);

 private:
  struct Job;
  void queue(std::unique_ptr<Job> job) noexcept;
  void run() noexcept;
  void write(Job& job) const noexcept;

  LogLevel log_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable idle_;
  std::deque<std::unique_ptr<Job>> jobs_;
  unsigned running_ = 0;
  bool stopping_ = false;
  // The worker, and the process that started it: a child made by fork() has no such thread and starts its
  // own (the parent's thread object is then leaked, never joined).
  std::unique_ptr<std::thread> worker_;
  pid_t owner_ = 0;
};

}  // namespace tropical::storage
