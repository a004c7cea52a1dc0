// main() of the GPU suite: runs the tests (each skips with a message without a
// GPU), then tells meson the suite was skipped (exit 77) if no GPU was there.
#include <gtest/gtest.h>

#include "tropical/jit/driver.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  if (result == 0 && !tropical::jit::driver::available()) {
    std::printf("no CUDA driver or device: every GPU test was skipped\n");
    return 77;
  }
  return result;
}
