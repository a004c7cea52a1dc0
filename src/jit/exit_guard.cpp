#include "tropical/jit/exit_guard.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

namespace tropical::jit::exit_guard {
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
};

// Leaked: the handler and detached workers may use it while statics are destroyed.
State& state() {
  static State* const s = new State;
  return *s;
}

void on_exit() noexcept {
  State& s = state();
  std::unique_lock lock(s.mutex);
  s.exiting = true;
  s.idle.wait_for(lock, std::chrono::seconds(kWaitSeconds), [&] { return s.active == 0; });
}

std::once_flag g_armed[3];

}  // namespace

void arm(After point) noexcept {
  state();  // constructed before the handler can run
  std::call_once(g_armed[static_cast<int>(point)], [] { std::atexit(on_exit); });
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
  std::lock_guard lock(s.mutex);
  if (--s.active == 0) s.idle.notify_all();
}

}  // namespace tropical::jit::exit_guard
