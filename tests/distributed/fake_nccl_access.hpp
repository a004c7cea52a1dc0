#pragma once

// The tests' handle on tests/fake_nccl's libnccl.so.2: its log and its knobs (fake_nccl.hpp), through the
// library that $TROPICAL_NCCL_LIBRARY names (the one the library under test opens).

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "../fake_nccl/fake_nccl.hpp"

namespace tropical::fake_nccl {

/// True where the test runs with the fake (meson sets $TROPICAL_TEST_FAKE_NCCL).
inline bool present() { return std::getenv("TROPICAL_TEST_FAKE_NCCL") != nullptr; }

inline void* handle() {
  static void* h = ::dlopen(std::getenv("TROPICAL_NCCL_LIBRARY"), RTLD_NOW | RTLD_LOCAL);
  return h;
}

template <class Fn>
Fn symbol(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(handle(), name));
}

/// Every call the fake got since the last reset.
inline std::string log() { return symbol<const char* (*)()>(kLog)(); }
inline void reset() { symbol<void (*)()>(kReset)(); }
inline void set_comm(int rank, int size, int device) { symbol<void (*)(int, int, int)>(kSetComm)(rank, size, device); }
inline void fail(const char* call, int result) { symbol<void (*)(const char*, int)>(kFail)(call, result); }
inline void set_async_error(int result) { symbol<void (*)(int)>(kSetAsyncError)(result); }
inline void set_in_progress(long rounds) { symbol<void (*)(long)>(kSetInProgress)(rounds); }
inline long async_queries() { return symbol<long (*)()>(kAsyncQueries)(); }

}  // namespace tropical::fake_nccl
