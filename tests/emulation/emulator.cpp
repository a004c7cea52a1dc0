// The fiber scheduler behind tests/emulation/cuda_host.hpp: a block's threads are ucontext fibers on the
// calling thread, run in turn until each returns or waits at the barrier; the barrier opens once every
// thread that has not returned waits there.
#include <ucontext.h>

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
};

struct Scheduler {
  ucontext_t main{};
  Fiber* current = nullptr;
  Entry entry = nullptr;
  void** args = nullptr;
  int any = 0;     // OR of the predicates passed to the barrier being filled
  int opened = 0;  // what the barrier that last opened returns
  unsigned waiting = 0;
  const void* site = nullptr;  // where the first thread waits at the barrier being filled
  bool divergent = false;      // a thread waits elsewhere
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

std::map<std::pair<std::string, std::string>, Entry>& kernels() {
  static std::map<std::pair<std::string, std::string>, Entry> table;
  return table;
}

}  // namespace

[[gnu::noinline]] int barrier(int predicate) {
  const void* site = __builtin_return_address(0);
  if (g_run.waiting == 0) g_run.site = site;
  if (site != g_run.site) g_run.divergent = true;
  g_run.any |= predicate;
  ++g_run.waiting;
  swapcontext(&g_run.current->context, &g_run.main);
  return g_run.opened;
}

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
        g_run.waiting = 0;
        g_run.divergent = false;
        for (bool forward = true;; forward = !forward) {
          unsigned live = 0;
          for (std::size_t t = 0; t < fibers.size(); ++t) {
            Fiber& f = fibers[forward ? t : fibers.size() - 1 - t];
            if (!f.done) live += resume(f) ? 1 : 0;
          }
          if (live == 0) break;
          if (g_run.divergent) throw std::runtime_error("threads of one block wait at different barriers");
          g_run.opened = g_run.any;  // every waiting thread reads it when resumed, before the next barrier fills
          g_run.any = 0;
          g_run.waiting = 0;
        }
      }
    }
  }
}

}  // namespace tropical::emulation
