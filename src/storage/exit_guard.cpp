#include "tropical/storage/exit_guard.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

namespace tropical::storage::exit_guard {
namespace {

// Why exit waits: NVRTC's exit handlers free state that a compile running on
// another thread still uses. Measured on the 2-core machine (a tuned gemm
// fragment, ~0.9 s, compiled on a detached thread; main() returning 0-700 ms
// into it): with no handler, 7 of 33 processes crashed (SIGSEGV or SIGABRT);
// after a first compile on the main thread and no handler, 1 of 30; with a
// handler that waits for the compile, registered after a first compile, 0 of
// 78 (registered before NVRTC was loaded: every one crashed, as NVRTC's
// handlers then run first). Hence: compile() is guarded and arms the handler
// after the first compile, and a background compile is never the first.
struct State {
  std::mutex mutex;
  std::condition_variable idle;
  unsigned active = 0;
  bool exiting = false;
  std::chrono::steady_clock::time_point deadline;  // set by the handler's first run
};

// Leaked: the handler and detached workers may use it while statics are destroyed.
State& state() {
  static State* const s = new State;
  return *s;
}

// Registered several times, it runs several times: the wait is bounded by one
// deadline, set by the first run, so exit waits kWaitSeconds at most in all.
void on_exit() noexcept {
  State& s = state();
  std::unique_lock lock(s.mutex);
  if (!s.exiting) {
    s.exiting = true;
    s.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kWaitSeconds);
  }
  s.idle.wait_until(lock, s.deadline, [&] { return s.active == 0; });
}

std::once_flag g_armed[3];

// Exit handlers registered after ours run before it, and NVRTC or the driver
// may register some after their first use: seen on the H100, a gemm_gpu_test
// (int16 kernels after the f32 ones) and a `tropical verify` crashed inside
// nvrtcCompileProgram at exit while this handler still waited for that
// compile. So the handler is registered again at the end of every guarded job
// (every compile is one) and after every foreground load of a kernel
// (rearm()). The second is what the H200 needed (bench/RESULTS.md, "`tropical
// verify`'s crash at exit: fixed by the re-registration"): the driver's PTX JIT registers four handlers of
// libnvidia-ptxjitcompiler on its first compile in a process, here a kernel's
// quick tier loaded after every other kernel came from the cache, and
// `tropical verify` then crashed in NVRTC at exit in 5 runs of 5 without the
// re-registration after foreground loads, 0 of 3 with it. The registrations
// are bounded (each is one entry in libc's list, ~32 bytes; after the first
// run the handler only waits out the same deadline): room for 8 GPUs x every
// kernel of the catalog x (2 loads + 1 job), ~4,400, and more.
constexpr int kMaxRegistrations = 16384;
std::atomic<int> g_registrations{0};
std::atomic<bool> g_any_armed{false};  // some point armed the handler: rearm() may register it again

void register_again() noexcept {
  if (g_registrations.load(std::memory_order_relaxed) >= kMaxRegistrations) return;  // no count past the bound
  if (g_registrations.fetch_add(1, std::memory_order_relaxed) < kMaxRegistrations) std::atexit(on_exit);
}

}  // namespace

void arm(After point) noexcept {
  state();  // constructed before the handler can run
  std::call_once(g_armed[static_cast<int>(point)], [] { std::atexit(on_exit); });
  g_any_armed.store(true, std::memory_order_release);
}

void rearm() noexcept {
  if (g_any_armed.load(std::memory_order_acquire) && !exiting()) register_again();
}

bool exiting() noexcept {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.exiting;
}

Scope::Scope() noexcept {
  State& s = state();
  std::lock_guard lock(s.mutex);
  entered_ = !s.exiting;
  if (entered_) ++s.active;
}

Scope::~Scope() {
  if (!entered_) return;
  State& s = state();
  bool exiting = false;
  {
    std::lock_guard lock(s.mutex);
    if (--s.active == 0) s.idle.notify_all();
    exiting = s.exiting;
  }
  if (!exiting) register_again();
}

}  // namespace tropical::storage::exit_guard
