#pragma once

namespace tropical::storage::exit_guard {

/// Where the exit handler is registered: after the first NVRTC compile of the
/// process, after the driver is first used for a background job, and before
/// the storage's first background copy (storage/promotion.hpp); and again at
/// the end of every guarded job, compiles included, and of every load of a
/// kernel outside one (rearm()): NVRTC and the driver may register handlers of
/// their own after their first use too. 16384 re-registrations at most.
enum class After { kCompiler, kDriver, kPromotion };

/// Registers, once per point, an exit handler that stops new guarded work and
/// waits (at most kWaitSeconds in all, however often it runs) for the guarded
/// work in flight. Exit handlers run last-registered first, so
/// registering after NVRTC and the driver set up theirs makes ours run before
/// they tear down. Thread-safe; never throws.
void arm(After point) noexcept;

/// Registers the handler again, if some point armed it (bounded with the
/// re-registrations after guarded jobs): after a foreground call that may have
/// registered exit handlers of its own while guarded work runs, such as the
/// driver's JIT of a kernel's quick tier (the registry calls it after every
/// load of a kernel outside a background job). Thread-safe; never throws.
void rearm() noexcept;

/// The longest the exit handler waits for guarded work.
inline constexpr int kWaitSeconds = 10;

/// True once the process has started to exit (the handler ran).
bool exiting() noexcept;

/// Guarded work: an NVRTC compile, or a background job that loads modules.
/// Converts to false if the process is exiting: the work must not start.
class Scope {
 public:
  Scope() noexcept;
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  explicit operator bool() const noexcept { return entered_; }

 private:
  bool entered_;
};

}  // namespace tropical::storage::exit_guard
