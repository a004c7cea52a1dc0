// tropical::cpu's argument checks, thread settings, instruction set choice,
// concurrent callers and use after fork().
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_data.hpp"
#include "tropical/error.hpp"

namespace tropical::cpu_test {
namespace {

constexpr Trans N = Trans::kNo;
constexpr std::int64_t kHuge = std::numeric_limits<std::int64_t>::max() / 2;

TEST(CpuArguments, bad_shapes_leading_dimensions_and_pointers_throw_invalid_argument) {
  std::vector<float> a(64, 1), b(64, 2), c(64, 0);
  std::vector<std::int32_t> x(64);
  EXPECT_THROW((cpu::gemm<MaxPlus, float>(N, N, -1, 2, 2, a.data(), 2, b.data(), 2, c.data(), 2)), InvalidArgument);
  EXPECT_THROW((cpu::gemm<MaxPlus, float>(N, N, 2, 2, -3, a.data(), 2, b.data(), 2, c.data(), 2)), InvalidArgument);
  EXPECT_THROW((cpu::gemm<MaxPlus, float>(N, N, 2, 4, 4, a.data(), 3, b.data(), 4, c.data(), 4)), InvalidArgument);
  EXPECT_THROW((cpu::gemm<MaxPlus, float>(N, N, 2, 4, 4, a.data(), 4, b.data(), 3, c.data(), 4)), InvalidArgument);
  EXPECT_THROW((cpu::gemm<MaxPlus, float>(N, N, 2, 4, 4, a.data(), 4, b.data(), 4, c.data(), 2)), InvalidArgument);
  EXPECT_THROW((cpu::gemm<MaxPlus, float>(N, N, 2, 2, 2, nullptr, 2, b.data(), 2, c.data(), 2)), InvalidArgument);
  EXPECT_THROW((cpu::gemm<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, nullptr, 2, c.data(), 2)), InvalidArgument);
  EXPECT_THROW((cpu::gemm<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, b.data(), 2, nullptr, 2)), InvalidArgument);
  EXPECT_THROW((cpu::gemm<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, b.data(), 2, a.data(), 2)), InvalidArgument);
  // C sharing elements with A, B or the argmax without starting at the same address (as on the GPU).
  EXPECT_THROW((cpu::gemm<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, b.data(), 2, a.data() + 1, 2)), InvalidArgument);
  EXPECT_THROW((cpu::gemm<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, b.data() + 3, 2, b.data(), 2)), InvalidArgument);
  EXPECT_THROW((cpu::gemm_argmax<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, b.data(), 2, c.data(), 2,
                                                 reinterpret_cast<std::int32_t*>(c.data() + 2), 2)),
               InvalidArgument);
  EXPECT_THROW((cpu::gemm_batched<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, 4, b.data(), 2, 4, a.data() + 6, 2, 4, 2)),
               InvalidArgument);
  // Disjoint blocks of one buffer still run (C after A in the same vector).
  EXPECT_NO_THROW((cpu::gemm<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, b.data(), 2, a.data() + 4, 2)));
  EXPECT_THROW((cpu::gemm<MaxPlus, float>(N, N, kHuge, 2, 2, a.data(), kHuge, b.data(), 2, c.data(), 2)),
               InvalidArgument);
  EXPECT_THROW((cpu::gemm<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, b.data(), 2, c.data(), 2, -1)), InvalidArgument);
  EXPECT_THROW((cpu::gemm_argmax<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, b.data(), 2, c.data(), 2, nullptr, 2)),
               InvalidArgument);
  EXPECT_THROW((cpu::gemm_argmax<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, b.data(), 2, c.data(), 2, x.data(), 1)),
               InvalidArgument);
  EXPECT_THROW((cpu::gemm_argmax<MaxPlus, float>(N, N, 2, 2, std::int64_t{1} << 31, a.data(), std::int64_t{1} << 31,
                                                 b.data(), 2, c.data(), 2, x.data(), 2)),
               InvalidArgument);
  // Batches: negative batch or stride, products of C that overlap, extents beyond 64 bits.
  EXPECT_THROW((cpu::gemm_batched<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, 4, b.data(), 2, 4, c.data(), 2, 4, -1)),
               InvalidArgument);
  EXPECT_THROW((cpu::gemm_batched<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, -4, b.data(), 2, 4, c.data(), 2, 4, 2)),
               InvalidArgument);
  EXPECT_THROW((cpu::gemm_batched<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, 4, b.data(), 2, 4, c.data(), 2, 3, 2)),
               InvalidArgument);
  EXPECT_THROW((cpu::gemm_batched<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, kHuge, b.data(), 2, 4, c.data(), 2, 4,
                                                  4)),
               InvalidArgument);
  EXPECT_THROW((cpu::gemm_batched_argmax<MaxPlus, float>(N, N, 2, 2, 2, a.data(), 2, 4, b.data(), 2, 4, c.data(), 2, 4,
                                                         x.data(), 2, 1, 2)),
               InvalidArgument);
  // Backward: null gradient, dC or argmax; MaxMul's operand; the gradient in place of dC.
  EXPECT_THROW((cpu::backward_a<MaxPlus, float>(N, N, 2, 2, 2, c.data(), 2, x.data(), 2, nullptr, 2, nullptr, 2)),
               InvalidArgument);
  EXPECT_THROW((cpu::backward_b<MaxPlus, float>(N, N, 2, 2, 2, nullptr, 2, x.data(), 2, nullptr, 2, a.data(), 2)),
               InvalidArgument);
  EXPECT_THROW((cpu::backward_a<MaxMul, float>(N, N, 2, 2, 2, c.data(), 2, x.data(), 2, nullptr, 2, a.data(), 2)),
               InvalidArgument);
  EXPECT_THROW((cpu::backward_a<MaxPlus, float>(N, N, 2, 2, 2, c.data(), 2, x.data(), 2, nullptr, 2, c.data(), 2)),
               InvalidArgument);
  EXPECT_THROW((cpu::backward_b_batched<MaxPlus, float>(N, N, 2, 2, 2, c.data(), 2, 4, x.data(), 2, 4, nullptr, 2, 0,
                                                        a.data(), 2, 1, 3)),
               InvalidArgument);
}

TEST(CpuArguments, a_gradient_sharing_any_byte_with_what_it_reads_is_refused_as_on_the_gpu) {
  std::vector<float> f(64, 1);
  std::vector<std::int32_t> x(64, 0);
  // dA (2 x 2) starting inside dC (2 x 2), not at its first element.
  EXPECT_THROW((cpu::backward_a<MaxPlus, float>(N, N, 2, 2, 2, f.data(), 2, x.data(), 2, nullptr, 2, f.data() + 2, 2)),
               InvalidArgument);
  EXPECT_THROW((cpu::backward_b<MinPlus, float>(N, N, 2, 2, 2, f.data() + 3, 2, x.data(), 2, nullptr, 2, f.data(), 2)),
               InvalidArgument);
  // The gradient over the argmax it is reading.
  EXPECT_THROW((cpu::backward_a<MaxPlus, float>(N, N, 2, 2, 2, f.data(), 2, x.data(), 2, nullptr, 2,
                                                reinterpret_cast<float*>(x.data() + 1), 2)),
               InvalidArgument);
  // MaxMul's gradient over the operand it multiplies by.
  EXPECT_THROW((cpu::backward_a<MaxMul, float>(N, N, 2, 2, 2, f.data(), 2, x.data(), 2, f.data() + 8, 2, f.data() + 11,
                                               2)),
               InvalidArgument);
  // A batch whose second gradient reaches the first dC.
  EXPECT_THROW((cpu::backward_a_batched<MaxPlus, float>(N, N, 2, 2, 2, f.data() + 8, 2, 0, x.data(), 2, 0, nullptr, 2, 0,
                                                        f.data(), 2, 6, 2)),
               InvalidArgument);
  // Interleaved but disjoint: dC in columns 0-1 and dA in columns 2-3 of one 2 x 4 buffer; both computed.
  std::fill(x.begin(), x.end(), 1);
  for (int i = 0; i < 8; ++i) f[i] = static_cast<float>(i);
  cpu::backward_a<MaxPlus, float>(N, N, 2, 2, 2, f.data(), 4, x.data(), 2, nullptr, 2, f.data() + 2, 4);
  // Row i of dA: (0, dC(i, 0) + dC(i, 1)) = row 0 (0, 1), row 1 (0, 9).
  std::vector<float> want(64, 1);
  std::copy_n(std::vector<float>{0, 1, 0, 1, 4, 5, 0, 9}.begin(), 8, want.begin());
  EXPECT_EQ(f, want);
}

TEST(CpuArguments, empty_products_accept_null_operands_and_write_nothing) {
  std::vector<float> c = {5, 5};
  cpu::gemm<MaxPlus, float>(N, N, 0, 2, 2, nullptr, 2, nullptr, 2, nullptr, 2);
  cpu::gemm<MaxPlus, float>(N, N, 2, 0, 2, nullptr, 2, nullptr, 1, nullptr, 1);
  cpu::gemm_batched<MaxPlus, float>(N, N, 2, 2, 2, nullptr, 2, 4, nullptr, 2, 4, nullptr, 2, 4, 0);
  // k = 0: C = the zero, A and B never read.
  cpu::gemm<MaxPlus, float>(N, N, 1, 2, 0, nullptr, 1, nullptr, 2, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{-std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}));
}

TEST(CpuThreads, thread_count_defaults_to_the_environment_and_can_be_set) {
  const char* env = std::getenv("TROPICAL_NUM_THREADS");
  const int initial = cpu::num_threads();
  EXPECT_GE(initial, 1);
  if (env != nullptr) {
    EXPECT_EQ(initial, std::atoi(env));
  }
  cpu::set_num_threads(3);
  EXPECT_EQ(cpu::num_threads(), 3);
  cpu::set_num_threads(0);
  EXPECT_EQ(cpu::num_threads(), initial);
  EXPECT_THROW(cpu::set_num_threads(-2), InvalidArgument);
}

/// A product big enough to use the pool (above the single-thread threshold).
void product_matches_reference(std::uint64_t seed, int threads) {
  std::mt19937_64 rng(seed);
  const std::int64_t m = 97, n = 131, k = 70;
  const std::vector<float> a = random_values<MaxPlus, float>(m * k, rng, Data::kTies);
  const std::vector<float> b = random_values<MaxPlus, float>(k * n, rng, Data::kTies);
  std::vector<float> want(m * n), got(m * n);
  std::vector<std::int32_t> want_x(m * n), got_x(m * n);
  reference::gemm_argmax<MaxPlus, float>(N, N, m, n, k, a.data(), k, b.data(), n, want.data(), n, want_x.data(), n);
  cpu::gemm_argmax<MaxPlus, float>(N, N, m, n, k, a.data(), k, b.data(), n, got.data(), n, got_x.data(), n, threads);
  expect_same_bits(got, want, "concurrent C");
  expect_same_bits(got_x, want_x, "concurrent argmax");
}

TEST(CpuThreads, concurrent_callers_share_the_pool_or_run_alone) {
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([t] {
      for (int i = 0; i < 3; ++i) product_matches_reference(static_cast<std::uint64_t>(t * 10 + i), 2 + t % 2);
    });
  }
  for (auto& c : callers) c.join();
}

TEST(CpuThreads, a_child_of_fork_computes_with_its_own_workers) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer does not support threads started after a multi-threaded fork";
#endif
  product_matches_reference(1, 2);  // the parent's pool has a worker now
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::mt19937_64 rng(3);
    const std::int64_t m = 97, n = 131, k = 70;
    const std::vector<float> a = random_values<MaxPlus, float>(m * k, rng, Data::kTies);
    const std::vector<float> b = random_values<MaxPlus, float>(k * n, rng, Data::kTies);
    std::vector<float> want(m * n), got(m * n);
    reference::gemm<MaxPlus, float>(N, N, m, n, k, a.data(), k, b.data(), n, want.data(), n);
    cpu::gemm<MaxPlus, float>(N, N, m, n, k, a.data(), k, b.data(), n, got.data(), n, 2);
    _exit(want == got ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(CpuIsa, a_forced_instruction_set_is_used_when_the_cpu_has_it) {
  const std::string isa(cpu::isa());
  RecordProperty("isa", isa);
  const char* forced = std::getenv("TROPICAL_CPU_ISA");
  if (forced == nullptr) GTEST_SKIP() << "TROPICAL_CPU_ISA not set; the dispatcher chose " << isa;
  const std::string want(forced);
#if defined(__x86_64__)
  const bool has = want == "scalar" || (want == "sse4" && __builtin_cpu_supports("sse4.2")) ||
                   (want == "avx2" && __builtin_cpu_supports("avx2")) ||
                   (want == "avx512" && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"));
#else
  const bool has = want == "scalar";
#endif
  if (!has) GTEST_SKIP() << "this CPU lacks " << want << "; the dispatcher chose " << isa;
  EXPECT_EQ(isa, want);
}

}  // namespace
}  // namespace tropical::cpu_test
