// The problem type (tropical/problem.hpp): one check() for every backend, and the three backends taking one
// Product or Gradient directly.
#include "tropical/problem.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tropical/cpu/gemm.hpp"
#include "tropical/error.hpp"
#include "tropical/reference.hpp"

namespace tropical {
namespace {

/// The message of the InvalidArgument that f throws ("" if none).
template <class F>
std::string rejection(F f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(Problem, shapes_that_disagree_are_rejected_with_the_operand_named) {
  std::vector<float> a(6), b(6), c(4);
  // A is 2 x 3 but B is 2 x 2: k disagrees.
  const Product<float> p{{a.data(), 2, 3, 3}, {b.data(), 2, 2, 2}, {c.data(), 2, 2, 2}};
  const std::string what = rejection([&] { check(p); });
  EXPECT_NE(what.find("B is 2 x 2 where the product needs 3 x 2"), std::string::npos) << what;
}

TEST(Problem, an_empty_product_checks_to_nothing_to_compute) {
  const Product<float> p{{nullptr, 0, 3, 3}, {nullptr, 3, 2, 2}, {nullptr, 0, 2, 2}};
  EXPECT_FALSE(check(p));
}

TEST(Problem, an_output_sharing_an_input_is_rejected_by_the_one_check) {
  std::vector<float> x(16);
  const Product<float> p{{x.data(), 2, 2, 2}, {x.data() + 4, 2, 2, 2}, {x.data() + 1, 2, 2, 2}};
  const std::string what = rejection([&] { check(p); });
  EXPECT_NE(what.find("C must not overlap A or B"), std::string::npos) << what;
}

TEST(Problem, a_gradient_sharing_the_argmax_is_rejected) {
  std::vector<float> gc(4), gb(4);
  std::vector<std::int32_t> arg(4);
  const Gradient<float> g{Wrt::kA, {gc.data(), 2, 2, 2}, {arg.data(), 2, 2, 2}, {nullptr, 2, 2, 2}, false,
                          {reinterpret_cast<float*>(arg.data()), 2, 2, 2}};
  const std::string what = rejection([&] { check(g); });
  EXPECT_NE(what.find("the gradient must not overlap"), std::string::npos) << what;
}

TEST(Problem, the_cpu_backend_and_the_reference_compute_one_product_alike) {
  const std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, -1, 2, 0, 1};
  std::vector<double> c_cpu(4, 7), c_ref(4, 7);
  std::vector<std::int32_t> x_cpu(4, 7), x_ref(4, 7);
  const auto with = [&](std::vector<double>& c, std::vector<std::int32_t>& x) {
    return Product<double>{{a.data(), 2, 3, 3}, {b.data(), 3, 2, 2}, {c.data(), 2, 2, 2},
                           Operand<std::int32_t>{x.data(), 2, 2, 2}};
  };
  cpu::product<MaxPlus, double>(with(c_cpu, x_cpu), 1);
  reference::product<MaxPlus, double>(with(c_ref, x_ref));
  EXPECT_EQ(c_cpu, c_ref);
  EXPECT_EQ(x_cpu, x_ref);
  EXPECT_EQ(c_ref, (std::vector<double>{3, 4, 6, 7}));
  EXPECT_EQ(x_ref, (std::vector<std::int32_t>{2, 1, 2, 1}));
}

}  // namespace
}  // namespace tropical
