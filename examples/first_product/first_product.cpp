// C = A (x) B over (max, +) on GPU 0, checked against the CPU reference.
// Build: c++ -std=c++20 first_product.cpp $(pkg-config --cflags --libs tropical)
#include <tropical/tropical.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
  using tropical::MaxPlus;
  const std::int64_t m = 256, n = 128, k = 64;  // row-major: A is m x k, B is k x n, C is m x n
  std::vector<float> a(m * k), b(k * n), want(m * n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) - 3;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) - 2;
  tropical::reference::gemm<MaxPlus, float>(tropical::Trans::kNo, tropical::Trans::kNo, m, n, k, a.data(), k,
                                            b.data(), n, want.data(), n);  // the same product on the CPU
  if (tropical::device_count() == 0) {  // never throws: 0 without a driver or GPU
    std::puts("no GPU here: the CPU reference ran, the GPU product is skipped");
    return 0;
  }
  try {
    // Device memory of GPU 0, freed at the end of the scope; any device pointers will do.
    tropical::DeviceBuffer<float> d_a(a), d_b(b), d_c(want.size());
    CUstream stream = nullptr;  // the default stream; a CUstream or cudaStream_t of GPU 0 works the same
    // Queued on the stream; the call returns without waiting.
    tropical::gemm<MaxPlus, float>(m, n, k, d_a.get(), d_b.get(), d_c.get(), stream);
    const std::vector<float> c = d_c.download(want.size());  // waits for GPU 0, then copies C back
    std::printf("C[0][0] = %g; %s the CPU reference\n", static_cast<double>(c[0]),
                c == want ? "matches" : "DIFFERS FROM");
    return c == want ? 0 : 1;
  } catch (const tropical::Error& e) {  // CompileError, CudaError, InvalidArgument, Unavailable
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
