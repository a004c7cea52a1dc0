// NCCL opened at run time and called (src/distributed/nccl.cpp, collective.cpp) over tests/fake_nccl's
// libnccl.so.2, named by $TROPICAL_NCCL_LIBRARY: the library found through it, a missing library or symbol
// refused with a message naming it, every failing call's ncclResult_t and text in the error, the collectives'
// arguments, a call under way (a non-blocking communicator's ncclInProgress) taken as queued, and the
// communicator's device and ranks checked.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "../../src/distributed/collective.hpp"
#include "../../src/distributed/nccl.hpp"
#include "fake_nccl_access.hpp"
#include "tropical/error.hpp"

namespace tropical {
namespace {

using distributed_detail::NcclOp;
using distributed_detail::NcclType;

class DistributedNccl : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fake_nccl::present()) GTEST_SKIP() << "runs in meson test distributed_nccl (tests/fake_nccl's libnccl)";
    fake_nccl::reset();
  }
};

ncclComm_t comm() { return reinterpret_cast<ncclComm_t>(std::uintptr_t{0x1000}); }
CUstream stream() { return reinterpret_cast<CUstream>(std::uintptr_t{0x2000}); }

/// The message of an Unavailable thrown by f ("" if none).
template <class F>
std::string unavailable(F&& f) {
  try {
    f();
  } catch (const Unavailable& e) {
    return e.what();
  }
  return "";
}

TEST_F(DistributedNccl, the_library_named_by_tropical_nccl_library_is_the_one_opened) {
  const distributed_detail::Nccl& api = distributed_detail::nccl();
  EXPECT_EQ(api.library, std::getenv("TROPICAL_NCCL_LIBRARY"));
  int size = 0;
  fake_nccl::set_comm(0, 3, 0);
  EXPECT_EQ(api.ncclCommCount(comm(), &size), 0);
  EXPECT_EQ(size, 3);
  EXPECT_EQ(fake_nccl::log(), "ncclCommCount(4096);") << "the calls went to the fake";
}

TEST_F(DistributedNccl, a_missing_library_is_unavailable_naming_it_and_where_the_name_came_from) {
  const std::string message = unavailable([] {
    distributed_detail::load_nccl("/nonexistent/libnccl.so.2", "from $TROPICAL_NCCL_LIBRARY");
  });
  EXPECT_NE(message.find("NCCL is not available"), std::string::npos) << message;
  EXPECT_NE(message.find("/nonexistent/libnccl.so.2"), std::string::npos) << message;
  EXPECT_NE(message.find("from $TROPICAL_NCCL_LIBRARY"), std::string::npos) << message;
  EXPECT_NE(message.find("could not be loaded"), std::string::npos) << message;
}

TEST_F(DistributedNccl, a_library_without_a_symbol_is_unavailable_naming_the_symbol) {
  const char* partial = std::getenv("TROPICAL_TEST_FAKE_NCCL_PARTIAL");
  ASSERT_NE(partial, nullptr);
  const std::string message = unavailable([&] { distributed_detail::load_nccl(partial, "a test's"); });
  EXPECT_NE(message.find(partial), std::string::npos) << message;
  EXPECT_NE(message.find("lacks ncclAllGather"), std::string::npos) << message;
}

TEST_F(DistributedNccl, a_failing_call_throws_nccl_error_with_its_result_and_nccls_text) {
  const distributed_detail::Nccl& api = distributed_detail::nccl();
  try {
    distributed_detail::check(api, 5, "ncclAllReduce");
    FAIL() << "no error";
  } catch (const NcclError& e) {
    EXPECT_EQ(e.call(), "ncclAllReduce");
    EXPECT_EQ(e.result(), 5);
    EXPECT_EQ(e.code(), Errc::kCuda);
    const std::string message = e.what();
    EXPECT_NE(message.find("ncclAllReduce failed with ncclResult_t 5"), std::string::npos) << message;
    EXPECT_NE(message.find(fake_nccl::kErrorText), std::string::npos) << message;
  }
  EXPECT_NO_THROW(distributed_detail::check(api, 0, "ncclAllReduce"));
}

TEST_F(DistributedNccl, an_all_reduce_is_in_place_with_the_collectives_type_and_op) {
  const distributed_detail::Nccl& api = distributed_detail::nccl();
  void* buffer = reinterpret_cast<void*>(std::uintptr_t{0x3000});
  distributed_detail::all_reduce(api, {true, NcclType::kFloat64, NcclOp::kMin}, buffer, 6, comm(), stream());
  EXPECT_EQ(fake_nccl::log(), "ncclAllReduce(send=12288,recv=12288,count=6,type=8,op=3,comm=4096,stream=8192);");
}

TEST_F(DistributedNccl, one_gather_goes_alone_and_two_in_one_group_of_bytes) {
  const distributed_detail::Nccl& api = distributed_detail::nccl();
  const auto at = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
  const distributed_detail::Gather one{at(0x10), at(0x20)};
  distributed_detail::all_gather(api, &one, 1, 12, comm(), stream());
  EXPECT_EQ(fake_nccl::log(), "ncclAllGather(send=16,recv=32,count=12,type=1,comm=4096,stream=8192);");
  fake_nccl::reset();
  const distributed_detail::Gather two[2] = {{at(0x10), at(0x20)}, {at(0x30), at(0x40)}};
  distributed_detail::all_gather(api, two, 2, 8, comm(), stream());
  EXPECT_EQ(fake_nccl::log(),
            "ncclGroupStart();"
            "ncclAllGather(send=16,recv=32,count=8,type=1,comm=4096,stream=8192);"
            "ncclAllGather(send=48,recv=64,count=8,type=1,comm=4096,stream=8192);"
            "ncclGroupEnd();");
}

TEST_F(DistributedNccl, a_collective_under_way_is_not_a_failure_but_nothing_else_passes) {
  const distributed_detail::Nccl& api = distributed_detail::nccl();
  EXPECT_NO_THROW(distributed_detail::check_queued(api, 7, "ncclAllReduce"));  // ncclInProgress
  EXPECT_NO_THROW(distributed_detail::check_queued(api, 0, "ncclAllReduce"));
  EXPECT_THROW(distributed_detail::check_queued(api, 6, "ncclAllReduce"), NcclError);
  EXPECT_THROW(distributed_detail::check(api, 7, "ncclCommCount"), NcclError) << "only calls that queue work";
  void* buffer = reinterpret_cast<void*>(std::uintptr_t{0x3000});
  fake_nccl::fail("ncclAllReduce", 7);
  EXPECT_NO_THROW(distributed_detail::all_reduce(api, {true, NcclType::kFloat32, NcclOp::kMax}, buffer, 6, comm(),
                                                 stream()));
  const auto at = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
  const distributed_detail::Gather two[2] = {{at(0x10), at(0x20)}, {at(0x30), at(0x40)}};
  fake_nccl::fail("ncclGroupEnd", 7);
  EXPECT_NO_THROW(distributed_detail::all_gather(api, two, 2, 8, comm(), stream()));
  fake_nccl::fail("ncclAllGather", 7);
  EXPECT_NO_THROW(distributed_detail::all_gather(api, two, 1, 8, comm(), stream()));
}

TEST_F(DistributedNccl, a_gather_failing_inside_the_group_still_ends_it) {
  const distributed_detail::Nccl& api = distributed_detail::nccl();
  const auto at = [](std::uintptr_t a) { return reinterpret_cast<void*>(a); };
  const distributed_detail::Gather two[2] = {{at(0x10), at(0x20)}, {at(0x30), at(0x40)}};
  fake_nccl::fail("ncclAllGather", 2);
  EXPECT_THROW(distributed_detail::all_gather(api, two, 2, 8, comm(), stream()), NcclError);
  EXPECT_EQ(fake_nccl::log(),
            "ncclGroupStart();ncclAllGather(send=16,recv=32,count=8,type=1,comm=4096,stream=8192);ncclGroupEnd();");
}

TEST_F(DistributedNccl, the_communicators_ranks_are_read_on_its_device_only) {
  const distributed_detail::Nccl& api = distributed_detail::nccl();
  fake_nccl::set_comm(2, 4, 0);
  const distributed_detail::Ranks r = distributed_detail::ranks_of(api, comm(), 0);
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.size, 4);
  fake_nccl::set_comm(0, 2, 1);
  try {
    distributed_detail::ranks_of(api, comm(), 0);
    FAIL() << "a communicator of another device was taken";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("communicator is on device 1"), std::string::npos) << e.what();
  }
  fake_nccl::set_comm(3, 2, 0);
  EXPECT_THROW(distributed_detail::ranks_of(api, comm(), 0), InvalidArgument);
  fake_nccl::set_comm(0, 2, 0);
  fake_nccl::fail("ncclCommCount", 4);
  try {
    distributed_detail::ranks_of(api, comm(), 0);
    FAIL() << "a failing ncclCommCount was ignored";
  } catch (const NcclError& e) {
    EXPECT_EQ(e.call(), "ncclCommCount");
    EXPECT_NE(std::string(e.what()).find(fake_nccl::kErrorText), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tropical
