#pragma once

/// The process-wide registry behind the public API, for the library and the
/// tool, tests and benchmarks of this source tree. Never installed: a program
/// using tropical sees tropical/runtime.hpp instead.
#include <atomic>

#include "tropical/jit/registry.hpp"
#include "tropical/storage/local_store.hpp"
#include "tropical/runtime.hpp"

namespace tropical {

namespace detail {

/// The process-wide registry once registry() has created it, else null.
extern std::atomic<jit::Registry*> registry_instance;

/// Creates the process-wide registry (once; thread-safe) and returns it.
jit::Registry& create_registry();

}  // namespace detail

/// The process-wide registry of the generated catalog behind every product,
/// with the disk cache configured from the environment (see storage::CacheConfig::from_env).
/// Created on first use and never destroyed; afterwards one acquire load.
/// Never fails for the cache: a malformed TROPICAL_CACHE_MAX_SIZE warns once
/// and keeps the default.
inline jit::Registry& registry() {
  if (jit::Registry* r = detail::registry_instance.load(std::memory_order_acquire)) [[likely]] return *r;
  return detail::create_registry();
}

}  // namespace tropical
