#include "nccl.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>

#include "tropical/error.hpp"

namespace tropical {

NcclError::NcclError(std::string call, int result, const std::string& text, const std::string& after)
    : Error(Errc::kCuda, "tropical: " + call + " failed with ncclResult_t " + std::to_string(result) +
                             (text.empty() ? "" : " (" + text + ")") + after),
      call_(std::move(call)),
      result_(result) {}

NcclError::NcclError(const std::string& what, std::string call, int result)
    : Error(Errc::kCuda, what), call_(std::move(call)), result_(result) {}

namespace {

std::string seconds_text(double seconds) {
  std::ostringstream text;
  text << seconds;
  return text.str();
}

}  // namespace

NcclTimeout::NcclTimeout(std::string call, double seconds)
    : NcclError("tropical: " + call + " did not complete within " + seconds_text(seconds) +
                    " s (a rank that never joined it: it threw, crashed or ran another plan); the communicator "
                    "was aborted (ncclCommAbort) and cannot be used again; the limit is "
                    "DistributedOptions::timeout_s, else $TROPICAL_NCCL_TIMEOUT_S",
                call, 0),
      seconds_(seconds) {}

namespace distributed_detail {
namespace {

template <class Fn>
bool resolve(void* handle, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(handle, symbol));
  return fn != nullptr;
}

struct Loaded {
  Nccl api;
  std::string error;  // empty once loaded
};

}  // namespace

Nccl load_nccl(const std::string& library, const std::string& origin) {
  const std::string prefix = "tropical: NCCL is not available: " + library + " (" + origin + ")";
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    throw Unavailable(prefix + " could not be loaded (" + (why != nullptr ? why : "unknown dlopen error") +
                      "); install NCCL 2 or set $" + kLibraryVariable + " to its libnccl.so.2");
  }
  Nccl api;
  const char* missing = nullptr;
#define TROPICAL_NCCL_FN(name) \
  if (missing == nullptr && !resolve(handle, #name, api.name)) missing = #name;
  TROPICAL_NCCL_FN(ncclCommCount)
  TROPICAL_NCCL_FN(ncclCommUserRank)
  TROPICAL_NCCL_FN(ncclCommCuDevice)
  TROPICAL_NCCL_FN(ncclAllReduce)
  TROPICAL_NCCL_FN(ncclAllGather)
  TROPICAL_NCCL_FN(ncclGroupStart)
  TROPICAL_NCCL_FN(ncclGroupEnd)
  TROPICAL_NCCL_FN(ncclGetErrorString)
  TROPICAL_NCCL_FN(ncclCommGetAsyncError)
  TROPICAL_NCCL_FN(ncclCommAbort)
#undef TROPICAL_NCCL_FN
  if (missing != nullptr) {
    ::dlclose(handle);
    throw Unavailable(prefix + " lacks " + missing + "; tropical needs NCCL 2.4 or later");
  }
  // The handle stays open for the life of the process, as the driver's: the entry points are kept.
  api.library = library;
  return api;
}

const Nccl& nccl() {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] {
    // Nothing throws out of call_once: the error is stored and thrown by every call.
    try {
      const char* env = std::getenv(kLibraryVariable);
      if (env != nullptr && *env != '\0') {
        // An explicit library is the only candidate: falling back to another NCCL would hide the mistake.
        loaded.api = load_nccl(env, std::string("from $") + kLibraryVariable);
      } else {
        loaded.api = load_nccl(kSoname, std::string("$") + kLibraryVariable + " unset, through the loader's path");
      }
    } catch (const std::exception& e) {
      loaded.error = e.what();
    }
  });
  if (!loaded.error.empty()) throw Unavailable(loaded.error);
  return loaded.api;
}

void check(const Nccl& api, int result, const char* call) {
  if (result == kNcclSuccess) return;
  const char* text = api.ncclGetErrorString != nullptr ? api.ncclGetErrorString(result) : nullptr;
  throw NcclError(call, result, text != nullptr ? text : "");
}

void check_queued(const Nccl& api, int result, const char* call) {
  if (result != kNcclInProgress) check(api, result, call);
}

Ranks ranks_of(const Nccl& api, ncclComm_t comm, int device) {
  Ranks r;
  int comm_device = -1;
  check(api, api.ncclCommCuDevice(comm, &comm_device), "ncclCommCuDevice");
  if (comm_device != device) {
    throw InvalidArgument("tropical: the NCCL communicator is on device " + std::to_string(comm_device) +
                          " but the einsum's arrays and stream are on device " + std::to_string(device));
  }
  check(api, api.ncclCommUserRank(comm, &r.rank), "ncclCommUserRank");
  check(api, api.ncclCommCount(comm, &r.size), "ncclCommCount");
  if (r.size < 1 || r.rank < 0 || r.rank >= r.size) {
    throw InvalidArgument("tropical: the NCCL communicator reports rank " + std::to_string(r.rank) + " of " +
                          std::to_string(r.size));
  }
  return r;
}

}  // namespace distributed_detail
}  // namespace tropical
