// A distributed run's bounded wait for its stream (src/distributed/wait.cpp) over tests/fake_cuda's libcuda.so.1
// (a stream whose cuStreamQuery answers as the test says) and tests/fake_nccl's libnccl.so.2: a stream that
// never completes times out after the limit, an asynchronous error of NCCL stops the wait with NCCL's text, and
// both abort the communicator; a stream that completes returns without an abort. A non-blocking communicator's
// call under way (ncclInProgress) is waited for before the stream says anything, and times out as a stream does.
// The limit's sources (the option, $TROPICAL_NCCL_TIMEOUT_S, the default) are checked too.

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "../../src/distributed/nccl.hpp"
#include "../../src/distributed/wait.hpp"
#include "../fake_cuda/fake_cuda.hpp"
#include "fake_nccl_access.hpp"
#include "tropical/distributed.hpp"
#include "tropical/error.hpp"
#include "tropical/runtime.hpp"

namespace tropical {
namespace {

using distributed_detail::wait_for_queued;
using distributed_detail::wait_for_stream;
using distributed_detail::wait_limit_s;

/// A symbol of the fake libcuda.so.1 the library loaded (null before it is).
template <class Fn>
Fn driver_symbol(const char* name) {
  static void* handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return handle != nullptr ? reinterpret_cast<Fn>(::dlsym(handle, name)) : nullptr;
}

void set_stream_query(long rounds) { driver_symbol<void (*)(long)>(fake_cuda::kSetStreamQuery)(rounds); }
long stream_queries() { return driver_symbol<long (*)()>(fake_cuda::kStreamQueries)(); }

class DistributedWait : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv(fake_cuda::kEnvironment) == nullptr || !fake_nccl::present()) {
      GTEST_SKIP() << "runs in meson test distributed_wait (tests/fake_cuda's libcuda, tests/fake_nccl's libnccl)";
    }
    ASSERT_EQ(device_count(), 1);  // loads the driver, whose symbols the test then finds
    ASSERT_NE(driver_symbol<void (*)(long)>(fake_cuda::kSetStreamQuery), nullptr);
    fake_nccl::reset();
    set_stream_query(0);
    ::unsetenv(distributed_detail::kTimeoutVariable);
  }
};

ncclComm_t comm() { return reinterpret_cast<ncclComm_t>(std::uintptr_t{0x1000}); }
CUstream stream() { return reinterpret_cast<CUstream>(std::uintptr_t{0x2000}); }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_F(DistributedWait, a_stream_that_never_completes_times_out_and_aborts_the_communicator) {
  set_stream_query(-1);
  const auto start = std::chrono::steady_clock::now();
  try {
    wait_for_stream(distributed_detail::nccl(), comm(), stream(), "ncclAllReduce", 0.1);
    FAIL() << "the wait returned while the stream was never done";
  } catch (const NcclTimeout& e) {
    EXPECT_EQ(e.call(), "ncclAllReduce");
    EXPECT_EQ(e.seconds(), 0.1);
    EXPECT_EQ(e.code(), Errc::kCuda);
    const std::string message = e.what();
    EXPECT_NE(message.find("ncclAllReduce did not complete within 0.1 s"), std::string::npos) << message;
    EXPECT_NE(message.find("aborted (ncclCommAbort)"), std::string::npos) << message;
  }
  const double took = seconds_since(start);
  EXPECT_GE(took, 0.1);
  EXPECT_LT(took, 5.0) << "the wait overran its limit";
  EXPECT_EQ(fake_nccl::log(), "ncclCommAbort(4096);");
  EXPECT_GT(fake_nccl::async_queries(), 0) << "NCCL's asynchronous error was never asked for";
}

TEST_F(DistributedWait, an_asynchronous_nccl_error_stops_the_wait_with_nccls_text_and_aborts) {
  set_stream_query(-1);
  fake_nccl::set_async_error(6);  // ncclRemoteError
  try {
    wait_for_stream(distributed_detail::nccl(), comm(), stream(), "ncclAllGather", 30);
    FAIL() << "the wait returned despite NCCL's error";
  } catch (const NcclTimeout& e) {
    FAIL() << "waited for the limit despite NCCL's error: " << e.what();
  } catch (const NcclError& e) {
    EXPECT_EQ(e.call(), "ncclAllGather");
    EXPECT_EQ(e.result(), 6);
    const std::string message = e.what();
    EXPECT_NE(message.find("ncclAllGather failed with ncclResult_t 6"), std::string::npos) << message;
    EXPECT_NE(message.find(fake_nccl::kErrorText), std::string::npos) << message;
    EXPECT_NE(message.find("ncclCommGetAsyncError"), std::string::npos) << message;
    EXPECT_NE(message.find("aborted (ncclCommAbort)"), std::string::npos) << message;
  }
  EXPECT_EQ(fake_nccl::log(), "ncclCommAbort(4096);");
}

TEST_F(DistributedWait, a_stream_that_completes_ends_the_wait_without_an_abort) {
  set_stream_query(5);
  EXPECT_NO_THROW(wait_for_stream(distributed_detail::nccl(), comm(), stream(), "ncclAllReduce", 30));
  EXPECT_EQ(stream_queries(), 6);
  EXPECT_EQ(fake_nccl::async_queries(), 6);
  EXPECT_EQ(fake_nccl::log(), "");
  set_stream_query(0);  // already done: one query
  EXPECT_NO_THROW(wait_for_stream(distributed_detail::nccl(), comm(), stream(), "ncclAllReduce", 0.1));
  EXPECT_EQ(stream_queries(), 1);
  EXPECT_EQ(fake_nccl::log(), "");
}

TEST_F(DistributedWait, a_call_under_way_is_waited_for_before_the_stream_is_asked) {
  fake_nccl::set_in_progress(4);  // a non-blocking communicator still queuing the collective's work
  set_stream_query(0);            // the stream is idle meanwhile: it has nothing of the collective yet
  EXPECT_NO_THROW(wait_for_stream(distributed_detail::nccl(), comm(), stream(), "ncclAllReduce", 30));
  EXPECT_EQ(fake_nccl::async_queries(), 5);
  EXPECT_EQ(stream_queries(), 1) << "the stream was asked while NCCL's call was under way";
  EXPECT_EQ(fake_nccl::log(), "");
  fake_nccl::reset();
  fake_nccl::set_in_progress(3);
  EXPECT_NO_THROW(wait_for_queued(distributed_detail::nccl(), comm(), "ncclAllGather", 30));
  EXPECT_EQ(fake_nccl::async_queries(), 4);
  EXPECT_EQ(stream_queries(), 1) << "wait_for_queued asked the stream";
  EXPECT_EQ(fake_nccl::log(), "");
}

TEST_F(DistributedWait, a_call_that_stays_under_way_times_out_and_aborts_the_communicator) {
  for (const bool stream_too : {true, false}) {
    fake_nccl::reset();
    fake_nccl::set_in_progress(-1);  // a peer that never joins the connection a first collective makes
    const auto start = std::chrono::steady_clock::now();
    try {
      if (stream_too) {
        wait_for_stream(distributed_detail::nccl(), comm(), stream(), "ncclAllReduce", 0.1);
      } else {
        wait_for_queued(distributed_detail::nccl(), comm(), "ncclAllReduce", 0.1);
      }
      ADD_FAILURE() << "the wait returned while NCCL's call was under way";
    } catch (const NcclTimeout& e) {
      EXPECT_EQ(e.call(), "ncclAllReduce");
    }
    const double took = seconds_since(start);
    EXPECT_GE(took, 0.1);
    EXPECT_LT(took, 5.0) << "the wait overran its limit";
    EXPECT_EQ(fake_nccl::log(), "ncclCommAbort(4096);");
  }
}

TEST_F(DistributedWait, the_limit_is_the_option_else_the_environment_else_600_seconds) {
  EXPECT_EQ(wait_limit_s(0), distributed_detail::kDefaultTimeoutS);
  EXPECT_EQ(distributed_detail::kDefaultTimeoutS, 600);
  EXPECT_EQ(wait_limit_s(2.5), 2.5);
  ::setenv(distributed_detail::kTimeoutVariable, "0.25", 1);
  EXPECT_EQ(wait_limit_s(0), 0.25);
  EXPECT_EQ(wait_limit_s(3), 3) << "the option wins over the environment";
  for (const char* bad : {"soon", "0", "-1", "1s", "inf"}) {
    ::setenv(distributed_detail::kTimeoutVariable, bad, 1);
    try {
      wait_limit_s(0);
      ADD_FAILURE() << "took $TROPICAL_NCCL_TIMEOUT_S=" << bad;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("TROPICAL_NCCL_TIMEOUT_S"), std::string::npos) << e.what();
    }
  }
  ::unsetenv(distributed_detail::kTimeoutVariable);
  EXPECT_THROW(wait_limit_s(-1), InvalidArgument);
}

}  // namespace
}  // namespace tropical
