// A stand-in for libnccl.so.2 (fake_nccl.hpp): the entry points tropical resolves, with nccl.h's C ABI (enums
// as int, streams and communicators as pointers), each appending itself and its arguments to a log. Built twice:
// whole, and without ncclAllGather (TROPICAL_FAKE_NCCL_WITHOUT_ALLGATHER) for the missing-symbol error.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fake_nccl.hpp"

namespace {

struct State {
  std::string log;
  std::string failing;
  int result = 0;
  int rank = 0, size = 1, device = 0;
  int async_error = 0;
  long in_progress = 0;  // ncclCommGetAsyncError calls still to report ncclInProgress; -1: all
  long async_queries = 0;
};

State& state() {
  static State s;
  return s;
}

int record(const char* call, const std::string& arguments) {
  State& s = state();
  s.log += std::string(call) + "(" + arguments + ");";
  return s.failing == call ? s.result : 0;
}

std::string pointer(const void* p) { return std::to_string(reinterpret_cast<std::uintptr_t>(p)); }

}  // namespace

typedef struct ncclComm* ncclComm_t;

extern "C" {

__attribute__((visibility("default"))) const char* tropical_fake_nccl_log() { return state().log.c_str(); }

__attribute__((visibility("default"))) void tropical_fake_nccl_reset() { state() = State{}; }

__attribute__((visibility("default"))) void tropical_fake_nccl_set_comm(int rank, int size, int device) {
  state().rank = rank;
  state().size = size;
  state().device = device;
}

__attribute__((visibility("default"))) void tropical_fake_nccl_fail(const char* call, int result) {
  state().failing = call;
  state().result = result;
}

__attribute__((visibility("default"))) void tropical_fake_nccl_set_async_error(int result) {
  state().async_error = result;
}

__attribute__((visibility("default"))) void tropical_fake_nccl_set_in_progress(long rounds) {
  state().in_progress = rounds;
}

__attribute__((visibility("default"))) long tropical_fake_nccl_async_queries() { return state().async_queries; }

__attribute__((visibility("default"))) const char* ncclGetErrorString(int result) {
  return result == 0 ? "no error" : tropical::fake_nccl::kErrorText;
}

__attribute__((visibility("default"))) int ncclCommCount(ncclComm_t comm, int* count) {
  *count = state().size;
  return record("ncclCommCount", pointer(comm));
}

__attribute__((visibility("default"))) int ncclCommUserRank(ncclComm_t comm, int* rank) {
  *rank = state().rank;
  return record("ncclCommUserRank", pointer(comm));
}

__attribute__((visibility("default"))) int ncclCommCuDevice(ncclComm_t comm, int* device) {
  *device = state().device;
  return record("ncclCommCuDevice", pointer(comm));
}

__attribute__((visibility("default"))) int ncclAllReduce(const void* send, void* recv, std::size_t count, int type,
                                                         int op, ncclComm_t comm, void* stream) {
  return record("ncclAllReduce", "send=" + pointer(send) + ",recv=" + pointer(recv) +
                                     ",count=" + std::to_string(count) + ",type=" + std::to_string(type) +
                                     ",op=" + std::to_string(op) + ",comm=" + pointer(comm) +
                                     ",stream=" + pointer(stream));
}

#ifndef TROPICAL_FAKE_NCCL_WITHOUT_ALLGATHER
__attribute__((visibility("default"))) int ncclAllGather(const void* send, void* recv, std::size_t count, int type,
                                                         ncclComm_t comm, void* stream) {
  return record("ncclAllGather", "send=" + pointer(send) + ",recv=" + pointer(recv) +
                                     ",count=" + std::to_string(count) + ",type=" + std::to_string(type) +
                                     ",comm=" + pointer(comm) + ",stream=" + pointer(stream));
}
#endif

// Polled in a loop: counted, not logged.
__attribute__((visibility("default"))) int ncclCommGetAsyncError(ncclComm_t, int* async_error) {
  State& s = state();
  ++s.async_queries;
  if (s.in_progress != 0) {
    if (s.in_progress > 0) --s.in_progress;
    *async_error = 7;  // ncclInProgress
    return 0;
  }
  *async_error = s.async_error;
  return 0;
}

__attribute__((visibility("default"))) int ncclCommAbort(ncclComm_t comm) { return record("ncclCommAbort", pointer(comm)); }

__attribute__((visibility("default"))) int ncclGroupStart() { return record("ncclGroupStart", ""); }

__attribute__((visibility("default"))) int ncclGroupEnd() { return record("ncclGroupEnd", ""); }

}  // extern "C"
