// main() of the GPU suite: runs the tests (each skips with a message without a
// GPU), then tells meson the suite was skipped (exit 77) if no GPU was there.
// meson shows this output on its console (verbose): with a GPU, gtest's brief
// output (failures and the summary); without one, only failures and one line
// with the driver's reason instead of a skip message per test.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace {

// Why no GPU test can run here ("" if one can): the driver's own message when it does not load.
std::string no_gpu_reason() {
  try {
    if (tropical::jit::driver::device_count() > 0) return "";
    return "the CUDA driver sees no device";
  } catch (const tropical::Error& e) {
    return e.what();
  }
}

// Prints failed assertions only (the default printer, removed without a GPU, prints every skip).
class FailurePrinter : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (result.failed()) {
      std::printf("%s:%d: Failure\n%s\n", result.file_name() != nullptr ? result.file_name() : "?",
                  result.line_number(), result.message());
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  GTEST_FLAG_SET(brief, true);
  ::testing::InitGoogleTest(&argc, argv);
  const std::string reason = no_gpu_reason();
  if (!reason.empty()) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter);
  }
  const int result = RUN_ALL_TESTS();
  if (result == 0 && !reason.empty()) {
    std::printf("SKIP: the %d GPU tests were skipped: %s\n",
                ::testing::UnitTest::GetInstance()->skipped_test_count(), reason.c_str());
    return 77;
  }
  if (!reason.empty()) {
    std::printf("%d of %d GPU tests failed without a GPU: %s\n", ::testing::UnitTest::GetInstance()->failed_test_count(),
                ::testing::UnitTest::GetInstance()->total_test_count(), reason.c_str());
  }
  return result;
}
