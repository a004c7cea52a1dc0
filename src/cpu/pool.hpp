#pragma once

// The CPU backend's threads: one process-wide pool of workers that a product
// lends its tasks to (blocks of C), and the default thread count.

#include <cstdint>
#include <functional>

namespace tropical::cpu::detail {

/// The thread count of a call: `requested` if positive, else num_threads().
int threads_for(int requested);

/// Runs body(t) for every t in [0, tasks) on the calling thread and up to
/// threads - 1 pool workers (tasks taken in order from a shared counter);
/// returns when every task has run and rethrows the first exception one threw
/// (the tasks not yet started are then skipped). If another call holds the pool,
/// or threads <= 1, the tasks run on the calling thread alone.
void parallel_for(std::int64_t tasks, int threads, const std::function<void(std::int64_t)>& body);

}  // namespace tropical::cpu::detail
