// The C ABI's einsum plans (src/c_api/einsum.cpp): a plan made, queried, run on host memory (values, argmax,
// counting) and destroyed; every failure a status and a message that names it, never an exception.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tropical/tropical.h"

namespace {

std::string last_error() { return tropical_last_error(); }

/// ij,jk->ik over 2 x 3 and 3 x 2 operands (labels 0, 1, 2).
void* make_plan(tropical_semiring semiring, tropical_dtype dtype) {
  const int64_t ranks[] = {2, 2}, labels[] = {0, 1, 1, 2}, shapes[] = {2, 3, 3, 2}, output[] = {0, 2};
  void* plan = nullptr;
  EXPECT_EQ(
      tropical_einsum_plan_create(semiring, dtype, 2, ranks, labels, shapes, 2, output, 0, nullptr, 0, &plan),
      TROPICAL_OK)
      << last_error();
  return plan;
}

TEST(CAbiEinsum, a_plan_runs_on_host_memory_and_reports_its_order) {
  void* plan = make_plan(TROPICAL_MAXPLUS, TROPICAL_F32);
  int64_t steps = 0, slices = 0;
  double log2_time = 0;
  ASSERT_EQ(tropical_einsum_plan_info(plan, &log2_time, nullptr, nullptr, &slices, &steps), TROPICAL_OK);
  EXPECT_EQ(steps, 1);
  EXPECT_EQ(slices, 1);
  int64_t path[2] = {-1, -1};
  ASSERT_EQ(tropical_einsum_plan_path(plan, path), TROPICAL_OK);
  EXPECT_EQ(path[0], 0);
  EXPECT_EQ(path[1], 1);
  const float a[] = {0, 1, 2, 3, 4, 5}, b[] = {1, 0, 0, 1, 2, 2};
  const void* operands[] = {a, b};
  float c[4] = {};
  ASSERT_EQ(tropical_einsum_plan_run_host(plan, operands, c, nullptr), TROPICAL_OK) << last_error();
  // c[i][k] = max_j a[i][j] + b[j][k]
  EXPECT_EQ(c[0], 4.0f);
  EXPECT_EQ(c[1], 4.0f);
  EXPECT_EQ(c[2], 7.0f);
  EXPECT_EQ(c[3], 7.0f);
  int64_t j[4] = {};
  ASSERT_EQ(tropical_einsum_plan_run_host_argmax(plan, operands, c, j, nullptr), TROPICAL_OK) << last_error();
  EXPECT_EQ(j[0], 2);
  EXPECT_EQ(j[3], 2);
  EXPECT_EQ(tropical_einsum_plan_destroy(plan), TROPICAL_OK);
  EXPECT_EQ(tropical_einsum_plan_destroy(nullptr), TROPICAL_OK);
}

TEST(CAbiEinsum, a_counting_plan_counts_and_refuses_the_value_runs) {
  void* plan = make_plan(TROPICAL_COUNTING, TROPICAL_F64);
  const double av[] = {0, 1, 1, 0, 0, 0}, ac[] = {1, 1, 2, 1, 1, 1}, bv[] = {0, 0, 0, 0, 0, 0},
               bc[] = {1, 1, 1, 1, 1, 1};
  const void* values[] = {av, bv};
  const void* counts[] = {ac, bc};
  double cv[4] = {}, cc[4] = {};
  ASSERT_EQ(tropical_einsum_plan_run_host_counting(plan, values, counts, cv, cc, nullptr), TROPICAL_OK)
      << last_error();
  EXPECT_EQ(cv[0], 1.0);
  EXPECT_EQ(cc[0], 3.0);  // j = 1 (count 1) and j = 2 (count 2)
  EXPECT_EQ(cc[2], 3.0);  // every j ties at 0
  EXPECT_EQ(tropical_einsum_plan_run_host(plan, values, cv, nullptr), TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("tropical_einsum_plan_run_host_counting"), std::string::npos);
  tropical_einsum_plan_destroy(plan);
}

TEST(CAbiEinsum, bad_networks_and_arguments_are_a_status_and_a_message) {
  const int64_t ranks[] = {2, 2}, labels[] = {0, 1, 1, 2}, shapes[] = {2, 3, 4, 2}, output[] = {0, 2};
  void* plan = reinterpret_cast<void*>(1);
  EXPECT_EQ(tropical_einsum_plan_create(TROPICAL_MAXPLUS, TROPICAL_F32, 2, ranks, labels, shapes, 2, output,
                                        0, nullptr, 0, &plan),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(last_error().find("label 1 has size 3 in one operand but 4 in operand 1"), std::string::npos);
  const int64_t good[] = {2, 3, 3, 2}, path[] = {0, 5};
  EXPECT_EQ(tropical_einsum_plan_create(TROPICAL_MAXPLUS, TROPICAL_F32, 2, ranks, labels, good, 2, output, 1,
                                        path, 0, &plan),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("step 0 of the path"), std::string::npos);
  EXPECT_EQ(tropical_einsum_plan_create(TROPICAL_ANDOR, TROPICAL_F32, 2, ranks, labels, good, 2, output, 0,
                                        nullptr, 0, &plan),
            TROPICAL_ERROR_NOT_IN_CATALOG);
  EXPECT_EQ(tropical_einsum_plan_run_host(nullptr, nullptr, nullptr, nullptr),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("plan is null"), std::string::npos);
  void* ok = make_plan(TROPICAL_MAXPLUS, TROPICAL_F32);
  const float a[6] = {};
  const void* one_null[] = {a, nullptr};
  float c[4];
  EXPECT_EQ(tropical_einsum_plan_run_host(ok, one_null, c, nullptr), TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("operand 1 is null"), std::string::npos);
  tropical_einsum_plan_destroy(ok);
}

// The device counting run's own checks, all before the device is asked for anything: each bad argument is a
// status and a message naming it (a host pointer that passes them is refused by the driver's view of memory, or
// as no driver at all, never run).
TEST(CAbiEinsum, the_device_counting_run_refuses_bad_arguments_with_a_message) {
  void* plan = make_plan(TROPICAL_COUNTING, TROPICAL_F64);
  const double a[6] = {}, b[6] = {};
  const void* values[] = {a, b};
  const void* counts[] = {a, b};
  const void* one_null[] = {a, nullptr};
  double v[4] = {}, c[4] = {};
  const auto expect = [](tropical_status status, const char* message) {
    EXPECT_EQ(status, TROPICAL_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find(message), std::string::npos) << last_error();
  };
  expect(tropical_einsum_plan_run_counting(nullptr, values, counts, v, c, nullptr, nullptr), "plan is null");
  expect(tropical_einsum_plan_run_counting(plan, nullptr, counts, v, c, nullptr, nullptr),
         "operands array is null");
  expect(tropical_einsum_plan_run_counting(plan, values, nullptr, v, c, nullptr, nullptr),
         "operands array is null");
  expect(tropical_einsum_plan_run_counting(plan, values, one_null, v, c, nullptr, nullptr), "operand 1 is null");
  expect(tropical_einsum_plan_run_counting(plan, values, counts, v, nullptr, nullptr, nullptr),
         "the einsum output is null");
  expect(tropical_einsum_plan_run_counting(plan, values, counts, reinterpret_cast<char*>(v) + 1, c, nullptr,
                                           nullptr),
         "not aligned");
  const tropical_status host = tropical_einsum_plan_run_counting(plan, values, counts, v, c, nullptr, nullptr);
  EXPECT_TRUE(host == TROPICAL_ERROR_INVALID_ARGUMENT || host == TROPICAL_ERROR_UNAVAILABLE) << last_error();
  EXPECT_FALSE(last_error().empty());
  void* maxplus = make_plan(TROPICAL_MAXPLUS, TROPICAL_F64);
  expect(tropical_einsum_plan_run_counting(maxplus, values, counts, v, c, nullptr, nullptr),
         "not made for TROPICAL_COUNTING");
  // And the other way round: the value runs name both counting runs.
  EXPECT_EQ(tropical_einsum_plan_run(plan, values, v, nullptr, nullptr), TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("tropical_einsum_plan_run_counting"), std::string::npos) << last_error();
  tropical_einsum_plan_destroy(maxplus);
  tropical_einsum_plan_destroy(plan);
}

TEST(CAbiEinsum, a_one_operand_plan_s_path_makes_the_same_plan) {
  // "ij->i": one operand; its path is one step of one position, written (0, -1).
  const int64_t rank[] = {2}, labels[] = {0, 1}, shape[] = {3, 4}, output[] = {0};
  void* plan = nullptr;
  ASSERT_EQ(tropical_einsum_plan_create(TROPICAL_MAXPLUS, TROPICAL_F32, 1, rank, labels, shape, 1, output, 0,
                                        nullptr, 0, &plan),
            TROPICAL_OK)
      << last_error();
  int64_t steps = 0;
  ASSERT_EQ(tropical_einsum_plan_info(plan, nullptr, nullptr, nullptr, nullptr, &steps), TROPICAL_OK);
  ASSERT_EQ(steps, 1);
  int64_t path[2] = {7, 7};
  ASSERT_EQ(tropical_einsum_plan_path(plan, path), TROPICAL_OK);
  EXPECT_EQ(path[0], 0);
  EXPECT_EQ(path[1], -1);
  void* again = nullptr;
  EXPECT_EQ(tropical_einsum_plan_create(TROPICAL_MAXPLUS, TROPICAL_F32, 1, rank, labels, shape, 1, output, 1, path,
                                        0, &again),
            TROPICAL_OK)
      << last_error();
  const float x[12] = {0, 5, 1, 2, 3, 3, 3, 3, -1, -2, -3, -4};
  const void* ops[] = {x};
  float got[3] = {}, want[3] = {5, 3, -1};
  ASSERT_EQ(tropical_einsum_plan_run_host(again, ops, got, nullptr), TROPICAL_OK) << last_error();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i], want[i]);
  tropical_einsum_plan_destroy(again);
  tropical_einsum_plan_destroy(plan);
}

TEST(CAbiEinsum, labels_and_path_positions_past_int_are_refused_not_truncated) {
  // Label 2^32 would become label 0 if narrowed: "ij->" on a 3 x 3 operand would be read as the diagonal "ii->".
  const int64_t rank[] = {2}, wide[] = {0, int64_t{1} << 32}, square[] = {3, 3};
  void* plan = nullptr;
  EXPECT_EQ(tropical_einsum_plan_create(TROPICAL_MAXPLUS, TROPICAL_F32, 1, rank, wide, square, 0, nullptr, 0,
                                        nullptr, 0, &plan),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(last_error().find("label 1 of operand 0 is 4294967296"), std::string::npos) << last_error();
  const int64_t ranks[] = {2, 2}, labels[] = {0, 1, 1, 2}, shapes[] = {2, 3, 3, 2}, output[] = {0, 2};
  const int64_t path[] = {int64_t{1} << 32, 1};  // would be (0, 1) if narrowed
  EXPECT_EQ(tropical_einsum_plan_create(TROPICAL_MAXPLUS, TROPICAL_F32, 2, ranks, labels, shapes, 2, output, 1,
                                        path, 0, &plan),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("position of path step 0 is 4294967296"), std::string::npos) << last_error();
  const int64_t negative[] = {0, -2};
  EXPECT_EQ(tropical_einsum_plan_create(TROPICAL_MAXPLUS, TROPICAL_F32, 2, ranks, labels, shapes, 2, negative, 0,
                                        nullptr, 0, &plan),
            TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("output label 1 is -2"), std::string::npos) << last_error();
}

}  // namespace

namespace {

/// ij,jk,kl->il over 2 x 8, 8 x 8 and 8 x 2 operands under a memory limit of 4 elements: a sliced plan.
void* sliced_plan(tropical_semiring semiring) {
  const int64_t ranks[] = {2, 2, 2}, labels[] = {0, 1, 1, 2, 2, 3}, shapes[] = {2, 8, 8, 8, 8, 2}, output[] = {0, 3};
  void* plan = nullptr;
  EXPECT_EQ(tropical_einsum_plan_create(semiring, TROPICAL_F32, 3, ranks, labels, shapes, 2, output, 0, nullptr, 4,
                                        &plan),
            TROPICAL_OK)
      << last_error();
  return plan;
}

}  // namespace

TEST(CAbiEinsum, the_parts_of_a_sliced_plan_merged_are_the_whole_run) {
  for (tropical_semiring semiring : {TROPICAL_MAXPLUS, TROPICAL_MINPLUS}) {
    void* plan = sliced_plan(semiring);
    int64_t slices = 0;
    ASSERT_EQ(tropical_einsum_plan_info(plan, nullptr, nullptr, nullptr, &slices, nullptr), TROPICAL_OK);
    ASSERT_GT(slices, 2);
    std::vector<float> a(16), b(64), c(16);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7) % 5);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 11) % 9) - 4;
    for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>((i * 3) % 4);
    const void* operands[] = {a.data(), b.data(), c.data()};
    float whole[4] = {};
    ASSERT_EQ(tropical_einsum_plan_run_host(plan, operands, whole, nullptr), TROPICAL_OK) << last_error();
    const bool max = semiring == TROPICAL_MAXPLUS;
    // Every split of the slices, up to one with more parts than slices (a part holding none gives the zero).
    for (int64_t parts = 1; parts <= slices + 1; ++parts) {
      float merged[4];
      for (float& x : merged) x = max ? -INFINITY : INFINITY;
      for (int64_t part = 0; part < parts; ++part) {
        float got[4] = {1, 1, 1, 1};
        ASSERT_EQ(tropical_einsum_plan_run_part_host(plan, operands, got, part, parts, nullptr), TROPICAL_OK)
            << last_error();
        if (part >= slices) {
          for (float x : got) EXPECT_EQ(x, max ? -INFINITY : INFINITY) << "part " << part << " of " << parts;
        }
        for (int i = 0; i < 4; ++i) merged[i] = max ? std::fmax(merged[i], got[i]) : std::fmin(merged[i], got[i]);
      }
      for (int i = 0; i < 4; ++i) EXPECT_EQ(merged[i], whole[i]) << parts << " parts, element " << i;
    }
    float out[4];
    for (auto [part, parts] : {std::pair<int64_t, int64_t>{0, 0}, {-1, 2}, {2, 2}}) {
      EXPECT_EQ(tropical_einsum_plan_run_part_host(plan, operands, out, part, parts, nullptr), TROPICAL_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(last_error().find("is not a share of the slices"), std::string::npos) << last_error();
    }
    EXPECT_EQ(tropical_einsum_plan_run_part(plan, operands, out, 0, 0, nullptr, nullptr), TROPICAL_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(tropical_einsum_plan_destroy(plan), TROPICAL_OK);
  }
  void* counting = make_plan(TROPICAL_COUNTING, TROPICAL_F64);
  const double x[6] = {};
  const void* operands[] = {x, x};
  double out[4];
  EXPECT_EQ(tropical_einsum_plan_run_part_host(counting, operands, out, 0, 1, nullptr), TROPICAL_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("counting plan"), std::string::npos) << last_error();
  EXPECT_EQ(tropical_einsum_plan_destroy(counting), TROPICAL_OK);
}
