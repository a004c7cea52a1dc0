// The launch sequence's argument check (src/launch.cpp): a kernel runs only with the argument struct of its own
// parameter list (tropical/kernel_args.hpp), refused before any driver call, so this needs no GPU.
#include "../src/launch.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tropical/gemm.hpp"

namespace tropical {
namespace {

TEST(Launch, every_kernel_takes_the_parameter_list_of_its_signature) {
  for (const auto& info : catalog::kInfo) {
    const auto signature = catalog::kSignatureOf[static_cast<std::size_t>(info.id)];
    EXPECT_NO_THROW(detail::check_signature(info.id, signature)) << info.name;
  }
  EXPECT_EQ(catalog::kSignatureOf[static_cast<std::size_t>(kernel_id<MaxPlus, float, Op::kGemmBatchedArgmax>())],
            catalog::GemmBatchedArgmaxArgs::kSignature);
  EXPECT_EQ(catalog::kSignatureOf[static_cast<std::size_t>(catalog::KernelId::kGemmBitsB32)],
            catalog::BitsArgs::kSignature);
}

TEST(Launch, refuses_another_kernels_argument_struct_before_the_driver) {
  const std::uint64_t unused = 0;
  catalog::GemmArgs args{.a = nullptr, .b = nullptr, .c = nullptr, .m = 1, .n = 1, .kk = 1, .lda = 1, .ldb = 1,
                         .ldc = 1, .trans_a = 0, .trans_b = 0, .alpha = &unused, .beta = &unused, .flags = 0,
                         .work = nullptr, .whole_rows = 0, .parts = 0};
  const auto argmax = kernel_id<MaxPlus, float, Op::kGemmArgmax>();
  EXPECT_THROW(detail::launch(argmax, 0, detail::Extent{1, 1, 1}, nullptr, args), std::logic_error);
}

}  // namespace
}  // namespace tropical
