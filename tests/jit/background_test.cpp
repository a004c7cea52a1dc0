// The background pool of tuned compiles: bounded, runs every job, and its
// destructor drops what has not started and waits for what runs.
#include "tropical/jit/background.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace tropical::jit {
namespace {

using namespace std::chrono_literals;

TEST(BackgroundPool, runs_every_job_on_at_most_its_bound_of_threads) {
  std::atomic<int> running{0}, peak{0}, done{0};
  {
    BackgroundPool pool(2);
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(pool.submit([&] {
        const int now = ++running;
        int p = peak.load();
        while (now > p && !peak.compare_exchange_weak(p, now)) {
        }
        std::this_thread::sleep_for(20ms);
        --running;
        ++done;
      }));
    }
    for (int i = 0; i < 1000 && done < 8; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(pool.threads(), 2u);
  }
  EXPECT_EQ(done, 8);
  EXPECT_EQ(peak, 2);
}

TEST(BackgroundPool, default_bound_is_one_per_spare_core_and_at_least_one) {
  const unsigned cores = std::thread::hardware_concurrency();
  EXPECT_EQ(BackgroundPool().max_threads(), cores > 1 ? cores - 1 : 1u);
}

TEST(BackgroundPool, destructor_waits_for_the_running_job_and_drops_the_queued_ones) {
  std::atomic<bool> started{false};
  std::atomic<int> finished{0};
  {
    BackgroundPool pool(1);
    pool.submit([&] {
      started = true;
      std::this_thread::sleep_for(100ms);
      ++finished;
    });
    pool.submit([&] { finished += 100; });
    while (!started) std::this_thread::yield();
  }
  EXPECT_EQ(finished, 1);
}

}  // namespace
}  // namespace tropical::jit
