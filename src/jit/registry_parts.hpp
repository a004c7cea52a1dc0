// What registry.cpp (slots, first use, publication) and registry_images.cpp
// (where a kernel's image comes from) share; private to the jit core.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>

#include "tropical/jit/registry.hpp"

namespace tropical::jit {

using Clock = std::chrono::steady_clock;

// Set on a background worker while it runs a tuned compile, for the statistics.
[[gnu::visibility("hidden")]] extern thread_local bool t_background;

// Compiles (NVRTC or the driver's JIT) made on this thread: warm() counts its own by the difference, where
// the registry's counters also hold those of other threads warming or resolving at the same time.
[[gnu::visibility("hidden")]] extern thread_local std::uint64_t t_compiles;

struct Registry::ImageSlot {
  std::once_flag once;
  std::atomic<bool> done{false};  // set after once ran: image or error is final
  std::optional<CompiledImage> image;
  std::exception_ptr error;
};

// Image slots are created on first use of (kernel, arch, tier): the map is
// touched on the slow path only, and a slot never moves once created.
struct Registry::ImageTable {
  std::mutex mutex;
  std::map<std::tuple<std::uint32_t, int, Tier>, std::unique_ptr<ImageSlot>> slots;
};

struct Registry::Counters {
  std::atomic<std::uint64_t> compiles{0};
  std::atomic<std::uint64_t> compile_ns{0};
  std::atomic<std::uint64_t> disk_hits{0};
  std::atomic<std::uint64_t> loads{0};
  std::atomic<std::uint64_t> load_ns{0};
  std::atomic<std::uint64_t> quick_compiles{0};
  std::atomic<std::uint64_t> quick_calls{0};
  std::atomic<std::uint64_t> background_compiles{0};
  std::atomic<std::uint64_t> first_to_tuned_ns{0};
  std::atomic<std::uint64_t> jit_compiles{0};
};

}  // namespace tropical::jit
