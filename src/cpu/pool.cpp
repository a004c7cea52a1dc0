#include "pool.hpp"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "../spans.hpp"
#include "tropical/cpu/gemm.hpp"

namespace tropical::cpu {
namespace detail {
namespace {

constexpr int kMaxThreads = 1024;

/// One parallel_for: the tasks, the next one to take, the first exception.
struct Job {
  const std::function<void(std::int64_t)>* body;
  std::int64_t tasks;
  std::atomic<std::int64_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;

  void work() {
    for (std::int64_t t = next.fetch_add(1, std::memory_order_relaxed); t < tasks;
         t = next.fetch_add(1, std::memory_order_relaxed)) {
      try {
        (*body)(t);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(tasks, std::memory_order_relaxed);
      }
    }
  }
};

/// Workers wait for a job; a job offers `seats` of them a place; the caller
/// works too and then waits until every worker that took a seat has left.
class Pool {
 public:
  void run(std::int64_t tasks, int threads, const std::function<void(std::int64_t)>& body) {
    Job job;
    job.body = &body;
    job.tasks = tasks;
    std::unique_lock<std::mutex> busy(run_mutex_, std::defer_lock);
    if (threads <= 1 || !busy.try_lock()) {
      job.work();
      if (job.error) std::rethrow_exception(job.error);
      return;
    }
    const int helpers = grow(threads - 1);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      seats_ = helpers;
      ++generation_;
    }
    work_cv_.notify_all();
    job.work();
    {
      // Workers that have not taken a seat yet never will: the tasks are done.
      std::unique_lock<std::mutex> lock(mutex_);
      seats_ = 0;
      done_cv_.wait(lock, [&] { return active_ == 0; });
      job_ = nullptr;
    }
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  /// Starts workers up to `wanted` (fewer if the system refuses threads); returns how many there are.
  int grow(int wanted) {
    const std::lock_guard<std::mutex> lock(mutex_);
    while (static_cast<int>(workers_) < wanted) {
      try {
        std::thread([this] { loop(); }).detach();
      } catch (const std::system_error&) {
        break;
      }
      ++workers_;
    }
    return static_cast<int>(workers_) < wanted ? static_cast<int>(workers_) : wanted;
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    std::uint64_t seen = generation_;
    for (;;) {
      work_cv_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (seats_ == 0) continue;
      --seats_;
      ++active_;
      Job* job = job_;
      lock.unlock();
      job->work();
      lock.lock();
      if (--active_ == 0) done_cv_.notify_all();
    }
  }

  std::mutex run_mutex_;  // one job at a time; a second caller works alone
  std::mutex mutex_;
  std::condition_variable work_cv_, done_cv_;
  std::uint64_t generation_ = 0;
  Job* job_ = nullptr;
  int seats_ = 0, active_ = 0;
  unsigned workers_ = 0;
};

/// The process's pool. Never destroyed: its workers are detached and may be
/// waiting while the process exits. A child of fork() has none of its parent's
/// workers, so it makes its own (the parent's object is abandoned there).
Pool& pool() {
  static std::mutex mutex;
  static Pool* current = nullptr;
  static pid_t owner = 0;
  const std::lock_guard<std::mutex> lock(mutex);
  if (current == nullptr || owner != getpid()) {
    current = new Pool;
    owner = getpid();
  }
  return *current;
}

std::atomic<int> default_threads{0};

/// TROPICAL_NUM_THREADS if a positive integer, else the hardware's thread count.
int environment_threads() {
  static const int value = [] {
    if (const char* env = std::getenv("TROPICAL_NUM_THREADS"); env != nullptr && *env != '\0') {
      char* end = nullptr;
      const long n = std::strtol(env, &end, 10);
      if (*end == '\0' && n > 0) return static_cast<int>(n < kMaxThreads ? n : kMaxThreads);
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw < kMaxThreads ? hw : kMaxThreads);
  }();
  return value;
}

}  // namespace

int threads_for(int requested) {
  if (requested < 0) tropical::detail::invalid("negative thread count " + std::to_string(requested));
  if (requested > 0) return requested < kMaxThreads ? requested : kMaxThreads;
  return num_threads();
}

void parallel_for(std::int64_t tasks, int threads, const std::function<void(std::int64_t)>& body) {
  if (tasks <= 0) return;
  if (threads > tasks) threads = static_cast<int>(tasks);
  pool().run(tasks, threads, body);
}

}  // namespace detail

int num_threads() {
  const int n = detail::default_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : detail::environment_threads();
}

void set_num_threads(int n) {
  if (n < 0) tropical::detail::invalid("negative thread count " + std::to_string(n));
  detail::default_threads.store(n < detail::kMaxThreads ? n : detail::kMaxThreads, std::memory_order_relaxed);
}

}  // namespace tropical::cpu
