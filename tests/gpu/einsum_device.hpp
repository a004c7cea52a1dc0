#pragma once

// What the GPU einsum tests share: a per-process temporary kernel cache, a network's operands on a device and its
// plan under a memory limit.

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "../einsum/random_networks.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/einsum.hpp"
#include "tropical/error.hpp"

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

/// net's plan under memory limit `limit` (0: none), or null where the limit cannot be met.
inline std::unique_ptr<EinsumPlan> plan_under(const Net& net, std::int64_t limit) {
  try {
    return std::make_unique<EinsumPlan>(net.inputs, net.output, net.shapes(), EinsumOptions{{}, limit});
  } catch (const InvalidArgument&) {
    return nullptr;
  }
}

/// Pointers to each of a network's host operands.
template <class T>
std::vector<const T*> host_pointers(const std::vector<std::vector<T>>& operands) {
  std::vector<const T*> pointers;
  for (const auto& x : operands) pointers.push_back(x.data());
  return pointers;
}

}  // namespace tropical::einsum_test
