// What every benchmark of this tree shares: a row never aborts the run, and a
// hand-made kernel argument list is checked against the kernel's source.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tropical::bench {

/// Runs body(state); an exception out of it (a CUDA error, no device, no NVRTC)
/// becomes the row's skip message, so the binary goes on with the next row.
template <class F>
void run_guarded(benchmark::State& state, F&& body) {
  try {
    body(state);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

/// F guarded: BENCHMARK(guarded<BM_x>)->Name("BM_x").
template <void (*F)(benchmark::State&)>
void guarded(benchmark::State& state) {
  run_guarded(state, F);
}

/// benchmark::RegisterBenchmark of a guarded body.
template <class F>
benchmark::internal::Benchmark* register_guarded(const std::string& name, F body) {
  return benchmark::RegisterBenchmark(name.c_str(),
                                      [body](benchmark::State& state) mutable { run_guarded(state, body); });
}

/// A cuLaunchKernel argument list and the size of each argument.
struct KernelArgs {
  std::vector<void*> pointers;
  std::vector<std::size_t> sizes;
  /// Appends one argument (which must outlive the launch).
  template <class T>
  KernelArgs& add(T& value) {
    pointers.push_back(&value);
    sizes.push_back(sizeof(T));
    return *this;
  }
};

/// The size of each parameter of kernel `name` in a catalog fragment (templates/*.cu.j2 spell them as
/// pointers, long long, int or value_t, whose size is value_size); empty if the signature is not found.
inline std::vector<std::size_t> parameter_sizes(std::string_view source, std::string_view name,
                                                std::size_t value_size) {
  const std::size_t at = source.find(std::string(name) + "(");
  if (at == std::string_view::npos) return {};
  const std::size_t open = at + name.size() + 1, close = source.find(')', open);
  if (close == std::string_view::npos) return {};
  std::vector<std::size_t> sizes;
  std::string_view rest = source.substr(open, close - open);
  while (!rest.empty()) {
    const std::size_t comma = std::min(rest.find(','), rest.size());
    const std::string_view param = rest.substr(0, comma);
    rest.remove_prefix(std::min(comma + 1, rest.size()));
    if (param.find('*') != std::string_view::npos || param.find("long long") != std::string_view::npos) {
      sizes.push_back(8);
    } else if (param.find("value_t") != std::string_view::npos) {
      sizes.push_back(value_size);
    } else {
      sizes.push_back(4);  // int
    }
  }
  return sizes;
}

}  // namespace tropical::bench
