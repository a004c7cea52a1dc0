// What every benchmark of this tree shares: a row never aborts the run.
#pragma once

#include <benchmark/benchmark.h>

#include <exception>
#include <string>

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

}  // namespace tropical::bench
