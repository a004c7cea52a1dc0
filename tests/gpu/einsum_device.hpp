#pragma once

// What the GPU einsum tests share: a per-process temporary kernel cache and a network's operands on a device.

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tropical/device_buffer.hpp"

namespace tropical::einsum_test {

/// Points TROPICAL_CACHE_DIR at a fresh temporary directory named from `prefix` (once a process): the tests never
/// touch the user's cache.
inline void use_temporary_cache(const char* prefix) {
  static const bool done = [prefix] {
    std::string pattern = (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    setenv("TROPICAL_CACHE_DIR", mkdtemp(pattern.data()), 1);
    return true;
  }();
  (void)done;
}

/// A network's operands copied to device `device` (an empty operand as one element), and their device pointers.
template <class T>
struct DeviceOperands {
  std::vector<std::unique_ptr<DeviceBuffer<T>>> buffers;
  std::vector<const T*> pointers;

  explicit DeviceOperands(const std::vector<std::vector<T>>& host, int device = 0) {
    for (const auto& x : host) {
      buffers.push_back(std::make_unique<DeviceBuffer<T>>(x.empty() ? std::vector<T>(1) : x, device));
      pointers.push_back(buffers.back()->get());
    }
  }
};

}  // namespace tropical::einsum_test
