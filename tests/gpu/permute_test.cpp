// The library's permute (src/permute.hpp) on a real GPU against the host loop: random copies of every element
// width, the einsum's shapes at full size (2^24 elements and more: a transpose, a rotation of three axes, a swap
// of outer axes, eight small axes shuffled, a row of 5 million), and the errors it raises before any launch.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../emulation/permute_cases.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/error.hpp"
#include "tropical/jit/driver.hpp"

namespace tropical {
namespace {

namespace drv = jit::driver;
using permute_test::Case;

class GpuPermute : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!drv::available()) GTEST_SKIP() << "no CUDA device: GPU tests need a GPU and its driver";
    static const bool cache = [] {
      std::string pattern = (std::filesystem::temp_directory_path() / "tropical-permute-XXXXXX").string();
      setenv("TROPICAL_CACHE_DIR", mkdtemp(pattern.data()), 1);
      return true;
    }();
    (void)cache;
  }
};

template <class T>
void check(const Case& c, std::mt19937_64& rng) {
  std::vector<T> src(static_cast<std::size_t>(c.src_elements));
  for (T& x : src) x = static_cast<T>(rng());
  std::vector<T> want(static_cast<std::size_t>(c.dst_elements), static_cast<T>(0x5a));
  DeviceBuffer<T> d_src(src), d_dst(want);
  permute_test::copy_on_host(src.data(), want.data(), c.copy);
  {
    drv::ScopedContext context(0);
    detail::permute(sizeof(T), d_src.get(), d_dst.get(), c.copy, nullptr);
  }
  const std::vector<T> got = d_dst.download(want.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) wrong += got[i] != want[i];
  EXPECT_EQ(wrong, 0u) << sizeof(T) << "-byte elements, " << c.what;
}

TEST_F(GpuPermute, random_copies_of_every_width_match_the_host_loop) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 40; ++i) {
    const Case c = permute_test::random_case(rng, 8, 1 << 18);
    check<std::uint8_t>(c, rng);
    check<std::int16_t>(c, rng);
    check<float>(c, rng);
    check<double>(c, rng);
  }
}

TEST_F(GpuPermute, the_einsums_shapes_at_full_size_match_the_host_loop) {
  std::mt19937_64 rng(12);
  for (const Case& c : {permute_test::permuted({4096, 4096}, {1, 0}), permute_test::permuted({4097, 4095}, {1, 0}),
                        permute_test::permuted({256, 256, 256}, {2, 0, 1}),
                        permute_test::permuted({256, 256, 256}, {1, 0, 2}),
                        permute_test::permuted({8, 4, 8, 16, 4, 8, 32, 4}, {6, 3, 0, 7, 2, 5, 1, 4}),
                        permute_test::permuted({2, 2, 2, 2, 2, 2, 2, 262144}, {7, 6, 5, 4, 3, 2, 1, 0}),
                        permute_test::permuted({3, 5000000}, {1, 0})}) {
    check<float>(c, rng);
  }
}

TEST_F(GpuPermute, bad_arguments_throw_before_any_launch) {
  DeviceBuffer<float> buffer(64);
  drv::ScopedContext context(0);
  detail::StridedCopy copy = permute_test::permuted({4, 4}, {1, 0}).copy;
  EXPECT_THROW(detail::permute(3, buffer.get(), buffer.get() + 16, copy, nullptr), InvalidArgument);
  EXPECT_THROW(detail::permute(4, nullptr, buffer.get(), copy, nullptr), InvalidArgument);
  copy.rank = detail::kMaxPermuteRank + 1;
  EXPECT_THROW(detail::permute(4, buffer.get(), buffer.get() + 16, copy, nullptr), InvalidArgument);
}

}  // namespace
}  // namespace tropical
