#pragma once

// What the distributed GPU tests need of NCCL itself to make communicators, opened at run time as the library opens it
// ($TROPICAL_NCCL_LIBRARY, else libnccl.so.2; nothing includes nccl.h or links libnccl): ncclUniqueId and the
// first fields of ncclConfig_t as nccl.h declares them, and a non-blocking communicator's init.

#include <dlfcn.h>
#include <stdlib.h>

#include <chrono>
#include <climits>
#include <cstddef>
#include <cstring>
#include <thread>

#include "tropical/distributed.hpp"

namespace tropical::nccl_test {

/// nccl.h's ncclUniqueId (passed by value).
struct UniqueId {
  char internal[128];
};

/// The fields of nccl.h's ncclConfig_t up to splitShare (NCCL 2.18), which NCCL reads by `size` and `version`
/// from a config of an older layout.
struct Config {
  std::size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cga_cluster_size;
  int min_ctas;
  int max_ctas;
  const char* net_name;
  int split_share;
};

/// NCCL_CONFIG_INITIALIZER's values (every setting NCCL's default), padding zeroed.
inline Config default_config() {
  Config c;
  std::memset(&c, 0, sizeof c);
  c.size = sizeof c;
  c.magic = 0xcafebeef;
  c.version = 21800;  // NCCL_VERSION(2, 18, 0)
  c.blocking = c.cga_cluster_size = c.min_ctas = c.max_ctas = c.split_share = INT_MIN;  // NCCL_CONFIG_UNDEF_INT
  c.net_name = nullptr;
  return c;
}

inline constexpr int kInProgress = 7;  // ncclInProgress

/// The NCCL the library opens, or null.
inline void* open_nccl() {
  const char* env = std::getenv("TROPICAL_NCCL_LIBRARY");
  return dlopen(env != nullptr && *env != '\0' ? env : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
}

template <class Fn>
Fn symbol(void* nccl, const char* name) {
  return reinterpret_cast<Fn>(dlsym(nccl, name));
}

/// Rank `rank` of `size` of the communicator `id` on the calling thread's current device, non-blocking
/// (ncclConfig_t::blocking = 0), waited for until it is ready (at most 120 s): null where it failed.
inline ncclComm_t init_nonblocking(void* nccl, int size, const UniqueId& id, int rank) {
  using InitConfig = int (*)(ncclComm_t*, int, UniqueId, int, Config*);
  using AsyncError = int (*)(ncclComm_t, int*);
  const auto init = symbol<InitConfig>(nccl, "ncclCommInitRankConfig");
  const auto async_error = symbol<AsyncError>(nccl, "ncclCommGetAsyncError");
  if (init == nullptr || async_error == nullptr) return nullptr;
  Config config = default_config();
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const int started = init(&comm, size, id, rank, &config);
  if (started != 0 && started != kInProgress) return nullptr;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int state = kInProgress;
  while (async_error(comm, &state) == 0 && state == kInProgress && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (state == 0) return comm;
  using Abort = int (*)(ncclComm_t);
  if (const auto abort = symbol<Abort>(nccl, "ncclCommAbort"); abort != nullptr && comm != nullptr) abort(comm);
  return nullptr;
}

}  // namespace tropical::nccl_test
