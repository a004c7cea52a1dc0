// The fiber scheduler behind tests/emulation/cuda_host.hpp: a block's threads are ucontext fibers on the
// calling thread, run in turn until each returns, waits at the block's or its warp's barrier, or yields (a
// spin-wait's step); a barrier opens once every thread of its block (warp) that has not returned waits there.
#include <ucontext.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "emulator.hpp"

namespace tropical::emulation {

Dim3 g_thread, g_block, g_block_dim, g_grid;

namespace {

// Kernels keep a few KiB of registers in locals; deep enough for the widest tile and gtest's frames.
constexpr std::size_t kStackBytes = 256 * 1024;

struct Fiber {
  ucontext_t context{};
  std::unique_ptr<char[]> stack{new char[kStackBytes]};
  Dim3 index;
  bool done = false;
  int waiting = 0;              // kRunnable, kAtBlock or kAtWarp
  const void* site = nullptr;  // the barrier call it waits at
};

constexpr int kRunnable = 0, kAtBlock = 1, kAtWarp = 2;
// Turns in a row in which the block's threads only yield, changing nothing: a deadlock (the threads are
// deterministic, so a turn that changes nothing leaves the next one the same; a few more for good measure).
constexpr unsigned kMaxIdleTurns = 16;

struct Scheduler {
  ucontext_t main{};
  Fiber* current = nullptr;
  Entry entry = nullptr;
  void** args = nullptr;
  int any = 0;     // OR of the predicates passed to the barrier being filled
  int opened = 0;  // what the barrier that last opened returns
  unsigned long long progress = 0;  // progress() calls
};

Scheduler g_run;

void fiber_main() {
  g_run.entry(g_run.args);
  g_run.current->done = true;
  swapcontext(&g_run.current->context, &g_run.main);
}

// getcontext and swapcontext return twice: kept out of launch()'s frame, whose loop variables they would
// clobber.
[[gnu::noinline]] void start(Fiber& f, Dim3 index) {
  f.index = index;
  f.done = false;
  f.waiting = kRunnable;
  f.site = nullptr;
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = f.stack.get();
  f.context.uc_stack.ss_size = kStackBytes;
  f.context.uc_link = nullptr;
  makecontext(&f.context, fiber_main, 0);
}

// Runs f until it returns or waits at the barrier; true if it has not returned.
[[gnu::noinline]] bool resume(Fiber& f) {
  g_thread = f.index;
  g_run.current = &f;
  swapcontext(&g_run.main, &f.context);
  return !f.done;
}

// Opens the barriers every live thread of their warp (block) waits at; false if none opened. Throws where the
// threads of a warp (block) that all wait do so at different barriers.
bool open_barriers(std::vector<Fiber>& fibers) {
  bool opened = false;
  for (std::size_t w = 0; w < fibers.size(); w += 32) {
    const std::size_t end = std::min(fibers.size(), w + 32);
    bool all = false;
    const void* site = nullptr;
    for (std::size_t t = w; t < end; ++t) {
      if (fibers[t].done) continue;
      if (fibers[t].waiting != kAtWarp) {
        all = false;
        break;
      }
      if (site != nullptr && fibers[t].site != site) {
        throw std::runtime_error("threads of one warp wait at different barriers");
      }
      site = fibers[t].site, all = true;
    }
    if (!all) continue;
    for (std::size_t t = w; t < end; ++t) fibers[t].waiting = kRunnable;
    opened = true;
  }
  const void* site = nullptr;
  for (const Fiber& f : fibers) {
    if (f.done) continue;
    if (f.waiting != kAtBlock) return opened;
    if (site != nullptr && f.site != site) {
      throw std::runtime_error("threads of one block wait at different barriers");
    }
    site = f.site;
  }
  if (site == nullptr) return opened;
  for (Fiber& f : fibers) f.waiting = kRunnable;
  g_run.opened = g_run.any;  // every waiting thread reads it when resumed, before the next barrier fills
  g_run.any = 0;
  return true;
}

// Runs a block's threads (started) until every one has returned: each turn resumes the runnable ones, in
// increasing order, then decreasing..., then opens what barriers it can.
void run_block(std::vector<Fiber>& fibers) {
  unsigned idle = 0;
  for (bool forward = true;; forward = !forward) {
    const unsigned long long before = g_run.progress;
    bool moved = false;
    for (std::size_t t = 0; t < fibers.size(); ++t) {
      Fiber& f = fibers[forward ? t : fibers.size() - 1 - t];
      if (f.done || f.waiting != kRunnable) continue;
      resume(f);
      moved |= f.done || f.waiting != kRunnable;
    }
    if (std::all_of(fibers.begin(), fibers.end(), [](const Fiber& f) { return f.done; })) return;
    moved |= open_barriers(fibers);
    if (moved || g_run.progress != before) {
      idle = 0;
      continue;
    }
    const auto runnable = [](const Fiber& f) { return !f.done && f.waiting == kRunnable; };
    if (std::none_of(fibers.begin(), fibers.end(), runnable)) {
      throw std::runtime_error("threads of one block wait at different barriers");
    }
    if (++idle > kMaxIdleTurns) throw std::runtime_error("threads of one block spin without progress (a deadlock)");
  }
}

std::map<std::pair<std::string, std::string>, Entry>& kernels() {
  static std::map<std::pair<std::string, std::string>, Entry> table;
  return table;
}

}  // namespace

[[gnu::noinline]] int barrier(int predicate) {
  g_run.current->site = __builtin_return_address(0);
  g_run.current->waiting = kAtBlock;
  g_run.any |= predicate;
  swapcontext(&g_run.current->context, &g_run.main);
  return g_run.opened;
}

[[gnu::noinline]] void warp_barrier() {
  g_run.current->site = __builtin_return_address(0);
  g_run.current->waiting = kAtWarp;
  swapcontext(&g_run.current->context, &g_run.main);
}

[[gnu::noinline]] void yield() { swapcontext(&g_run.current->context, &g_run.main); }

void progress() { ++g_run.progress; }

bool add_kernel(const char* name, const char* tier, Entry entry) {
  kernels()[{name, tier}] = entry;
  return true;
}

Entry find_kernel(const char* name, const char* tier) {
  const auto it = kernels().find({name, tier});
  return it == kernels().end() ? nullptr : it->second;
}

void launch(Entry entry, void** args, Dim3 grid, Dim3 block) {
  std::vector<Fiber> fibers(static_cast<std::size_t>(block.x) * block.y * block.z);
  g_grid = grid;
  g_block_dim = block;
  g_run.entry = entry;
  g_run.args = args;
  for (unsigned bz = 0; bz < grid.z; ++bz) {
    for (unsigned by = 0; by < grid.y; ++by) {
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        g_block = Dim3{bx, by, bz};
        std::size_t i = 0;
        for (unsigned tz = 0; tz < block.z; ++tz) {
          for (unsigned ty = 0; ty < block.y; ++ty) {
            for (unsigned tx = 0; tx < block.x; ++tx, ++i) start(fibers[i], Dim3{tx, ty, tz});
          }
        }
        g_run.any = g_run.opened = 0;
        run_block(fibers);
      }
    }
  }
}

}  // namespace tropical::emulation
