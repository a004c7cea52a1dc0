#pragma once

// What the test-only libcuda.so.1 of this directory pretends to hold, for tests that check arguments against
// the driver's view of memory without a GPU (meson test api_fake_driver runs the api suite with it).
#include <cstdint>

namespace tropical::fake_cuda {

/// Three device allocations of kBytes each: two back to back, [kFirst, kSecond) and [kSecond, kSecond +
/// kBytes), and one apart at kThird. Any other address is not CUDA memory. Nothing is ever read or written.
inline constexpr std::uint64_t kBytes = std::uint64_t{1} << 20;
inline constexpr std::uintptr_t kFirst = std::uintptr_t{1} << 32;
inline constexpr std::uintptr_t kSecond = kFirst + kBytes;
inline constexpr std::uintptr_t kThird = std::uintptr_t{1} << 33;

/// The exported function of the fake libcuda.so.1 (extern "C" long()) that counts calls of the entry points
/// it does not support (contexts, memsets, launches): a call refused by an argument check adds none.
inline constexpr const char* kUnsupportedCalls = "tropical_fake_cuda_unsupported_calls";

/// extern "C" void (long rounds): cuStreamQuery of any stream answers CUDA_ERROR_NOT_READY `rounds` times (every
/// time where negative), then CUDA_SUCCESS; resets the count below. Before any call: CUDA_SUCCESS.
inline constexpr const char* kSetStreamQuery = "tropical_fake_cuda_set_stream_query";
/// extern "C" long (): cuStreamQuery's calls since the last kSetStreamQuery.
inline constexpr const char* kStreamQueries = "tropical_fake_cuda_stream_queries";

/// The environment variable the api_fake_driver test sets, so that tests know which driver they see.
inline constexpr const char* kEnvironment = "TROPICAL_TEST_FAKE_DRIVER";

}  // namespace tropical::fake_cuda
