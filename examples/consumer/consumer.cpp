// Uses tropical::gemm<MaxPlus, float> when a GPU is present; without one it
// warms the kernel into the disk cache (NVRTC, no GPU needed) and checks the
// CPU reference, so it runs anywhere the toolkit is installed.
#include <tropical/tropical.hpp>

#include <cstdio>
#include <vector>

int main() {
  using tropical::MaxPlus;
  const std::vector<float> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  std::vector<float> c(4);
  tropical::reference::gemm<MaxPlus, float>(tropical::Trans::kNo, tropical::Trans::kNo, 2, 2, 2, a.data(), 2,
                                            b.data(), 2, c.data(), 2);
  if (c != std::vector<float>{9, 10, 11, 12}) {
    std::puts("CPU reference: wrong result");
    return 1;
  }
  if (tropical::device_count() == 0) {
    const tropical::catalog::KernelId id = tropical::kernel_id<MaxPlus, float, tropical::Op::kGemm>();
    const auto report = tropical::warm(90, std::span(&id, 1));
    std::printf("no GPU: warmed %zu kernel for sm_90 (%zu compiled, %zu cached), CPU reference ok\n",
                report.kernels, report.compiled, report.ready);
    return report.errors.empty() ? 0 : 1;
  }
  tropical::DeviceBuffer<float> da(a), db(b), dc(c.size());
  tropical::gemm<MaxPlus, float>(2, 2, 2, da.get(), db.get(), dc.get());
  const std::vector<float> got = dc.download(c.size());
  std::printf("GPU: C = %g %g %g %g\n", got[0], got[1], got[2], got[3]);
  return got == c ? 0 : 1;
}
