// The C ABI's own checks: enum arguments outside their enums (passed from C, c_callers.c), and operand or
// scalar pointers not aligned for their element type. Each is TROPICAL_ERROR_INVALID_ARGUMENT with a message,
// never a load of the bad value (CI runs this under UndefinedBehaviorSanitizer, which would report one).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "c_callers.h"
#include "tropical/tropical.h"

namespace {

constexpr int kMaxPlus = TROPICAL_MAXPLUS, kF64 = TROPICAL_F64, kNo = TROPICAL_NO_TRANS;

TEST(CAbiEnums, queries_answer_no_for_values_outside_the_enums) {
  for (const int bad : {99, -1, 8, 1 << 20}) {
    EXPECT_EQ(c_has_kernel(bad, kF64, TROPICAL_OP_GEMM), 0) << bad;
    EXPECT_EQ(c_has_kernel(kMaxPlus, bad, TROPICAL_OP_GEMM), 0) << bad;
    EXPECT_EQ(c_has_kernel(kMaxPlus, kF64, bad), 0) << bad;
    EXPECT_EQ(c_cpu_has_kernel(bad, kF64, TROPICAL_OP_GEMM), 0) << bad;
    EXPECT_EQ(c_dtype_size(bad), 0u) << bad;
    EXPECT_EQ(c_find_kernel(bad, kF64, TROPICAL_OP_GEMM), TROPICAL_ERROR_INVALID_ARGUMENT) << bad;
    EXPECT_EQ(c_find_kernel(kMaxPlus, bad, TROPICAL_OP_GEMM), TROPICAL_ERROR_INVALID_ARGUMENT) << bad;
    EXPECT_EQ(c_find_kernel(kMaxPlus, kF64, bad), TROPICAL_ERROR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(std::string(tropical_last_error()).find(std::to_string(bad)), std::string::npos) << tropical_last_error();
  }
  // The values inside still work.
  EXPECT_EQ(c_has_kernel(kMaxPlus, kF64, TROPICAL_OP_GEMM), 1);
  EXPECT_EQ(c_dtype_size(TROPICAL_I16), 2u);
  EXPECT_EQ(c_find_kernel(TROPICAL_COUNTING, TROPICAL_F32, TROPICAL_OP_GEMM), TROPICAL_OK);
}

TEST(CAbiEnums, every_product_refuses_each_enum_argument_outside_its_enum) {
  ASSERT_EQ(c_call_count(), 20);
  for (int which = 0; which < c_call_count(); ++which) {
    const bool counting = which == 8 || which == 9 || which == 18 || which == 19;
    for (const int bad : {99, -1, 2}) {
      // 2 is a semiring and a dtype but no tropical_trans.
      if (bad != 2 && !counting) {
        EXPECT_EQ(c_call(which, bad, kF64, kNo, kNo), TROPICAL_ERROR_INVALID_ARGUMENT) << which << " semiring " << bad;
        EXPECT_NE(std::string(tropical_last_error()).find("is not a tropical_semiring"), std::string::npos)
            << tropical_last_error();
      }
      if (bad != 2) {
        EXPECT_EQ(c_call(which, kMaxPlus, bad, kNo, kNo), TROPICAL_ERROR_INVALID_ARGUMENT) << which << " dtype " << bad;
        EXPECT_NE(std::string(tropical_last_error()).find("is not a tropical_dtype"), std::string::npos)
            << tropical_last_error();
      }
      EXPECT_EQ(c_call(which, kMaxPlus, kF64, bad, kNo), TROPICAL_ERROR_INVALID_ARGUMENT) << which << " ta " << bad;
      EXPECT_NE(std::string(tropical_last_error()).find("ta = " + std::to_string(bad)), std::string::npos)
          << tropical_last_error();
      EXPECT_EQ(c_call(which, kMaxPlus, kF64, kNo, bad), TROPICAL_ERROR_INVALID_ARGUMENT) << which << " tb " << bad;
      EXPECT_NE(std::string(tropical_last_error()).find("tb = " + std::to_string(bad)), std::string::npos)
          << tropical_last_error();
    }
  }
  // The CPU products run with the values inside (the GPU ones need a device).
  EXPECT_EQ(c_call(10, kMaxPlus, kF64, kNo, TROPICAL_TRANS), TROPICAL_OK) << tropical_last_error();
  EXPECT_EQ(c_call(18, 0, kF64, kNo, kNo), TROPICAL_OK) << tropical_last_error();
}

TEST(CAbiMessages, control_bytes_a_caller_passed_are_not_sent_back_raw) {
  std::uint32_t id = 0;
  EXPECT_EQ(tropical_kernel_id("no\x1b[2Jsuch\akernel", &id), TROPICAL_ERROR_NOT_IN_CATALOG);
  const std::string message = tropical_last_error();
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  EXPECT_EQ(message.find('\a'), std::string::npos) << message;
  EXPECT_NE(message.find("no?[2Jsuch?kernel"), std::string::npos) << message;
}

/// Storage with room to place an element at any byte offset.
struct Bytes {
  alignas(16) unsigned char data[256] = {};
  void* at(std::size_t offset) { return data + offset; }
};

void expect_misaligned(tropical_status status, const std::string& name) {
  EXPECT_EQ(status, TROPICAL_ERROR_INVALID_ARGUMENT) << name;
  const std::string message = tropical_last_error();
  EXPECT_NE(message.find(name + " = 0x"), std::string::npos) << message;
  EXPECT_NE(message.find("not aligned"), std::string::npos) << message;
}

TEST(CAbiAlignment, a_scalar_not_aligned_for_its_type_is_refused_before_it_is_read) {
  std::vector<double> a(4, 1), b(4, 2), c(4, 0);
  Bytes scalar;
  const double value = 3;
  std::memcpy(scalar.at(1), &value, sizeof value);
  expect_misaligned(tropical_cpu_gemm(TROPICAL_MAXPLUS, TROPICAL_F64, TROPICAL_NO_TRANS, TROPICAL_NO_TRANS, 2, 2, 2,
                                      scalar.at(1), a.data(), 2, b.data(), 2, nullptr, c.data(), 2),
                    "alpha");
  expect_misaligned(tropical_cpu_gemm_batched(TROPICAL_MAXPLUS, TROPICAL_F64, TROPICAL_NO_TRANS, TROPICAL_NO_TRANS, 2,
                                              2, 2, nullptr, a.data(), 2, 0, b.data(), 2, 0, scalar.at(4), c.data(),
                                              2, 4, 1),
                    "beta");
  expect_misaligned(tropical_gemm(TROPICAL_MAXPLUS, TROPICAL_F64, TROPICAL_NO_TRANS, TROPICAL_NO_TRANS, 2, 2, 2,
                                  scalar.at(2), a.data(), 2, b.data(), 2, nullptr, c.data(), 2, nullptr),
                    "alpha");
  // The same value, aligned, is used: alpha = 3 adds 3 to max(1 + 2, 1 + 2).
  std::memcpy(scalar.at(8), &value, sizeof value);
  ASSERT_EQ(tropical_cpu_gemm(TROPICAL_MAXPLUS, TROPICAL_F64, TROPICAL_NO_TRANS, TROPICAL_NO_TRANS, 2, 2, 2,
                              scalar.at(8), a.data(), 2, b.data(), 2, nullptr, c.data(), 2),
            TROPICAL_OK)
      << tropical_last_error();
  EXPECT_EQ(c[3], 6.0);
}

TEST(CAbiAlignment, operands_not_aligned_for_their_type_are_refused_before_anything_is_read) {
  Bytes a, b, c, x;
  const auto gemm = [&](std::size_t ao, std::size_t bo, std::size_t co) {
    return tropical_cpu_gemm(TROPICAL_MAXPLUS, TROPICAL_F32, TROPICAL_NO_TRANS, TROPICAL_NO_TRANS, 4, 4, 4, nullptr,
                             a.at(ao), 4, b.at(bo), 4, nullptr, c.at(co), 4);
  };
  expect_misaligned(gemm(1, 0, 0), "A");
  expect_misaligned(gemm(0, 2, 0), "B");
  expect_misaligned(gemm(0, 0, 3), "C");
  EXPECT_EQ(gemm(4, 8, 12), TROPICAL_OK) << tropical_last_error();
  expect_misaligned(tropical_cpu_gemm_argmax(TROPICAL_MAXPLUS, TROPICAL_F32, TROPICAL_NO_TRANS, TROPICAL_NO_TRANS, 4,
                                             4, 4, a.at(0), 4, b.at(0), 4, c.at(0), 4,
                                             reinterpret_cast<std::int32_t*>(x.at(2)), 4),
                    "argmax");
  expect_misaligned(tropical_cpu_backward_a(TROPICAL_MAXPLUS, TROPICAL_F64, TROPICAL_NO_TRANS, TROPICAL_NO_TRANS, 2,
                                            2, 2, a.at(4), 2, reinterpret_cast<const std::int32_t*>(x.at(0)), 2,
                                            nullptr, 2, c.at(0), 2),
                    "grad_c");
  expect_misaligned(tropical_cpu_backward_b(TROPICAL_MAXMUL, TROPICAL_F64, TROPICAL_NO_TRANS, TROPICAL_NO_TRANS, 2,
                                            2, 2, a.at(0), 2, reinterpret_cast<const std::int32_t*>(x.at(0)), 2,
                                            b.at(4), 2, c.at(0), 2),
                    "A");
  expect_misaligned(tropical_cpu_counting_gemm(TROPICAL_F64, TROPICAL_NO_TRANS, TROPICAL_NO_TRANS, 2, 2, 2, a.at(0), 2,
                                               a.at(64), 2, b.at(0), 2, b.at(64), 2, c.at(0), 2, c.at(68), 2),
                    "c_counts");
  // Device pointers too: refused before the driver is asked about them.
  expect_misaligned(tropical_gemm(TROPICAL_MINPLUS, TROPICAL_I16, TROPICAL_NO_TRANS, TROPICAL_NO_TRANS, 2, 2, 2,
                                  nullptr, a.at(0), 2, b.at(1), 2, nullptr, c.at(0), 2, nullptr),
                    "B");
}

}  // namespace
