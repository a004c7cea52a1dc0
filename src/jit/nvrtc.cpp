#include "tropical/jit/nvrtc.hpp"

#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <glob.h>
#include <nvrtc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tropical/error.hpp"
#include "tropical/jit/exit_guard.hpp"

#ifndef TROPICAL_CUDA_LIBDIR
#error "TROPICAL_CUDA_LIBDIR must name the CUDA toolkit's lib64 directory (set by src/meson.build)"
#endif

namespace tropical::jit {
namespace {

constexpr const char* kSoname = "libnvrtc.so.13";
constexpr const char* kEnvOverride = "TROPICAL_NVRTC";

// Where libnvrtc is taken from. Resolved once and shared by nvrtc_identity()
// and the loader, so the cache key always names the library that compiles.
struct Location {
  std::string path;   // what dlopen is given: a path, or the bare soname
  std::string tried;  // the search, for error messages
  std::string identity;
};

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The text of a small regular file, without blocking on a FIFO; "" otherwise.
std::string small_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return {};
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= (64 << 10)) {
    text.resize(static_cast<std::size_t>(st.st_size));
    const ssize_t n = ::read(fd, text.data(), text.size());
    text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  ::close(fd);
  return text;
}

// The directories a loader configuration file names, in order, following its `include` lines (glob patterns,
// relative to /etc): what ldconfig builds ld.so.cache from, and where a CUDA toolkit registers its lib
// directory, so a bare soname resolves here to the file dlopen will load (TROPICAL_NVRTC=
// libnvrtc.so.13 got another identity than the same file by its path, and every entry was compiled again).
void add_loader_dirs(const std::string& file, std::vector<std::string>* dirs, int depth) {
  if (depth > 4) return;
  const std::string text = small_file(file);
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t end = std::min(rest.find('\n'), rest.size());
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    line = line.substr(0, std::min(line.find('#'), line.size()));
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    if (line.starts_with("include") && line.size() > 7 && std::isspace(static_cast<unsigned char>(line[7]))) {
      std::string pattern(line.substr(8));
      while (!pattern.empty() && std::isspace(static_cast<unsigned char>(pattern.front()))) pattern.erase(0, 1);
      if (!pattern.starts_with("/")) pattern = "/etc/" + pattern;
      glob_t found{};
      if (::glob(pattern.c_str(), 0, nullptr, &found) == 0) {
        for (std::size_t i = 0; i < found.gl_pathc; ++i) add_loader_dirs(found.gl_pathv[i], dirs, depth + 1);
      }
      ::globfree(&found);
    } else if (line.starts_with("/")) {
      dirs->emplace_back(line);
    }
  }
}

// dlopen searches for a name without a slash; identity approximates that
// search with LD_LIBRARY_PATH, the directories of /etc/ld.so.conf (what
// ld.so.cache holds) and the usual system directories (RUNPATHs are not
// consulted).
std::string find_in_search_path(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("LD_LIBRARY_PATH")) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      const std::string_view dir = rest.substr(0, colon);
      if (!dir.empty()) dirs.emplace_back(dir);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  add_loader_dirs("/etc/ld.so.conf", &dirs, 0);
  for (const char* dir :
       {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}) {
    dirs.emplace_back(dir);
  }
  for (const std::string& dir : dirs) {
    std::string candidate = dir + "/" + name;
    if (is_regular_file(candidate)) return candidate;
  }
  return {};
}

std::string identity_of(const std::string& path) {
  const std::string file = path.find('/') == std::string::npos ? find_in_search_path(path) : path;
  // Not found by name: the loader's cache will pick some libnvrtc.so.13; the
  // toolkit we were built against is the best identity left.
  if (file.empty()) return path + ":built-with-cuda-" + std::to_string(CUDA_VERSION);
  char resolved[PATH_MAX];
  if (::realpath(file.c_str(), resolved) == nullptr) return file;
  struct stat st {};
  if (::stat(resolved, &st) != 0) return resolved;
  std::string name(resolved);
  name.erase(0, name.rfind('/') + 1);
  return name + ":" + std::to_string(static_cast<long long>(st.st_size));
}

Location locate() {
  Location loc;
  const std::string in_libdir = std::string(TROPICAL_CUDA_LIBDIR) + "/" + kSoname;
  if (const char* env = std::getenv(kEnvOverride); env != nullptr && *env != '\0') {
    // An explicit override is the only candidate: silently compiling with
    // another NVRTC would file entries under the wrong identity.
    loc.path = env;
    loc.tried = std::string("$") + kEnvOverride + "=" + env;
  } else if (is_regular_file(in_libdir)) {
    loc.path = in_libdir;
    loc.tried = in_libdir + " ($" + kEnvOverride + " unset)";
  } else {
    loc.path = kSoname;
    loc.tried = std::string("$") + kEnvOverride + " unset, " + in_libdir + " not found, then " + kSoname +
                " through the dynamic loader's search path";
  }
  loc.identity = identity_of(loc.path);
  return loc;
}

const Location& location() {
  static const Location loc = locate();
  return loc;
}

#define TROPICAL_NVRTC_FUNCTIONS(X) \
  X(nvrtcVersion)                   \
  X(nvrtcGetErrorString)            \
  X(nvrtcGetNumSupportedArchs)      \
  X(nvrtcGetSupportedArchs)         \
  X(nvrtcCreateProgram)             \
  X(nvrtcDestroyProgram)            \
  X(nvrtcCompileProgram)            \
  X(nvrtcGetProgramLogSize)         \
  X(nvrtcGetProgramLog)             \
  X(nvrtcGetPTXSize)                \
  X(nvrtcGetPTX)                    \
  X(nvrtcGetCUBINSize)              \
  X(nvrtcGetCUBIN)

struct Nvrtc {
#define TROPICAL_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
  TROPICAL_NVRTC_FUNCTIONS(TROPICAL_NVRTC_MEMBER)
#undef TROPICAL_NVRTC_MEMBER
};

struct Library {
  Nvrtc fns;
  std::string error;  // empty once fns is complete
};

std::once_flag g_load_once;
std::atomic<bool> g_compiled{false};
Library g_library;
std::atomic<bool> g_loaded{false};

template <class Fn>
bool resolve(void* handle, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(handle, symbol));
  return fn != nullptr;
}

// Runs inside call_once, so it reports through g_library.error instead of throwing.
void load() noexcept {
  const Location& loc = location();
  void* handle = ::dlopen(loc.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    g_library.error = "tropical: NVRTC is unavailable: could not load " + loc.tried + ": " +
                      (why != nullptr ? why : "unknown dlopen error") +
                      " (set $TROPICAL_NVRTC to the full path of libnvrtc.so.13)";
    return;
  }
  // The handle is never closed: compiled images and nvrtc_loaded() outlive any one compile.
  g_loaded.store(true, std::memory_order_release);
  Nvrtc fns;
#define TROPICAL_NVRTC_RESOLVE(name)                                                             \
  if (!resolve(handle, #name, fns.name)) {                                                       \
    g_library.error = "tropical: NVRTC is unavailable: " + loc.path + " does not export " #name; \
    return;                                                                                      \
  }
  TROPICAL_NVRTC_FUNCTIONS(TROPICAL_NVRTC_RESOLVE)
#undef TROPICAL_NVRTC_RESOLVE
  g_library.fns = fns;
}

// Loads libnvrtc on first use; the stored error is rethrown on every call.
const Nvrtc& nvrtc() {
  std::call_once(g_load_once, load);
  if (!g_library.error.empty()) throw Unavailable(g_library.error);
  return g_library.fns;
}

class Program {
 public:
  Program(const Nvrtc& api, nvrtcProgram prog) : api_(api), prog_(prog) {}
  ~Program() { api_.nvrtcDestroyProgram(&prog_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const noexcept { return prog_; }

 private:
  const Nvrtc& api_;
  nvrtcProgram prog_;
};

// NVRTC 13 has no warnings-as-errors switch, so a warning is recognised in the
// log: its diagnostics read "file(line): warning #N-D: ...", and driver-level
// messages "nvrtc: warning : ...". Case-insensitive, to catch "Warning" too.
bool reports_warning(std::string_view log) {
  constexpr std::string_view kWord = "warning";
  const auto it = std::search(log.begin(), log.end(), kWord.begin(), kWord.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == b;
  });
  return it != log.end();
}

}  // namespace

std::vector<std::string> compile_options(int arch, Effort effort, bool arch_specific) {
  std::vector<std::string> options = {
      "--gpu-architecture=sm_" + std::to_string(arch) + (arch_specific ? "a" : ""),
      "--std=c++17",
      "--fmad=false",
      "--ftz=false",
  };
  if (effort == Effort::kLight) {
    options.emplace_back("--Ofast-compile=min");
    options.emplace_back("--minimal");
  }
  return options;
}

std::vector<std::string> compile_options(const KernelSource& kernel, int arch, Effort effort) {
  return compile_options(arch, effort, kernel.feature_arch != 0 && kernel.feature_arch == arch);
}

CompiledImage compile(const KernelSource& kernel, int arch, Effort effort) {
  // An exit handler waits for compiles in flight: NVRTC's own exit handlers
  // would pull its state from under them (src/jit/exit_guard.cpp).
  const exit_guard::Scope guard;
  if (!guard) throw Unavailable("tropical: not compiling " + std::string(kernel.name) + ": the process is exiting");
  const Nvrtc& api = nvrtc();
  std::vector<std::string> options = compile_options(kernel, arch, effort);
  const std::string name(kernel.name);

  // Every failure after loading is reported as a CompileError of this kernel.
  const auto fail = [&](const std::string& why, const std::string& log) {
    throw CompileError(name, log.empty() ? why : why + "\n" + log, options);
  };
  const auto failed_call = [&](const char* call, nvrtcResult result, const std::string& log) {
    fail(std::string(call) + " failed: " + api.nvrtcGetErrorString(result), log);
  };

  // string_views in a catalog need not be NUL-terminated.
  const std::string source(kernel.source);
  const std::string file = name + ".cu";
  nvrtcProgram raw = nullptr;
  if (const nvrtcResult r = api.nvrtcCreateProgram(&raw, source.c_str(), file.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS) {
    failed_call("nvrtcCreateProgram", r, {});
  }
  const Program prog(api, raw);

  std::vector<const char*> argv;
  argv.reserve(options.size());
  for (const std::string& option : options) argv.push_back(option.c_str());
  const nvrtcResult compiled =
      api.nvrtcCompileProgram(prog.get(), static_cast<int>(argv.size()), argv.data());

  std::string log;
  std::size_t log_size = 0;
  if (const nvrtcResult r = api.nvrtcGetProgramLogSize(prog.get(), &log_size); r != NVRTC_SUCCESS) {
    failed_call("nvrtcGetProgramLogSize", r, {});
  }
  if (log_size > 1) {
    log.resize(log_size);
    if (const nvrtcResult r = api.nvrtcGetProgramLog(prog.get(), log.data()); r != NVRTC_SUCCESS) {
      failed_call("nvrtcGetProgramLog", r, {});
    }
    log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  }
  if (compiled != NVRTC_SUCCESS || reports_warning(log)) {
    throw CompileError(name, log.empty() ? api.nvrtcGetErrorString(compiled) : log, options);
  }

  CompiledImage image;
  std::size_t cubin_size = 0;
  if (const nvrtcResult r = api.nvrtcGetCUBINSize(prog.get(), &cubin_size); r != NVRTC_SUCCESS) {
    failed_call("nvrtcGetCUBINSize", r, log);
  }
  if (cubin_size == 0) fail("NVRTC produced no CUBIN for " + options.front(), log);
  image.cubin.resize(cubin_size);
  if (const nvrtcResult r = api.nvrtcGetCUBIN(prog.get(), reinterpret_cast<char*>(image.cubin.data()));
      r != NVRTC_SUCCESS) {
    failed_call("nvrtcGetCUBIN", r, log);
  }

  std::size_t ptx_size = 0;
  if (const nvrtcResult r = api.nvrtcGetPTXSize(prog.get(), &ptx_size); r != NVRTC_SUCCESS) {
    failed_call("nvrtcGetPTXSize", r, log);
  }
  image.ptx.resize(ptx_size);
  if (const nvrtcResult r = api.nvrtcGetPTX(prog.get(), image.ptx.data()); r != NVRTC_SUCCESS) {
    failed_call("nvrtcGetPTX", r, log);
  }
  // The reported size counts the terminating NUL.
  while (!image.ptx.empty() && image.ptx.back() == '\0') image.ptx.pop_back();
  // NVRTC registers exit handlers during its first compile: the guard's
  // handler goes after them, so it runs before them (and again after every
  // compile, when the guard's scope ends: src/jit/exit_guard.cpp).
  g_compiled.store(true, std::memory_order_release);
  exit_guard::arm(exit_guard::After::kCompiler);
  return image;
}

bool nvrtc_compiled() noexcept { return g_compiled.load(std::memory_order_acquire); }

void prepare_compiler() {
  if (nvrtc_compiled()) return;
  static constexpr KernelSource kTrivial{0, "tropical_prepare", "extern \"C\" __global__ void tropical_prepare() {}\n",
                                         ""};
  compile(kTrivial, 80);
}

const std::string& nvrtc_identity() { return location().identity; }

std::string nvrtc_version() {
  const Nvrtc& api = nvrtc();
  int major = 0;
  int minor = 0;
  if (const nvrtcResult r = api.nvrtcVersion(&major, &minor); r != NVRTC_SUCCESS) {
    throw Unavailable(std::string("tropical: nvrtcVersion failed: ") + api.nvrtcGetErrorString(r));
  }
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<int> supported_archs() {
  const Nvrtc& api = nvrtc();
  int count = 0;
  if (const nvrtcResult r = api.nvrtcGetNumSupportedArchs(&count); r != NVRTC_SUCCESS) {
    throw Unavailable(std::string("tropical: nvrtcGetNumSupportedArchs failed: ") + api.nvrtcGetErrorString(r));
  }
  std::vector<int> archs(static_cast<std::size_t>(std::max(count, 0)));
  if (const nvrtcResult r = api.nvrtcGetSupportedArchs(archs.data()); r != NVRTC_SUCCESS) {
    throw Unavailable(std::string("tropical: nvrtcGetSupportedArchs failed: ") + api.nvrtcGetErrorString(r));
  }
  std::sort(archs.begin(), archs.end());
  return archs;
}

bool nvrtc_loaded() noexcept { return g_loaded.load(std::memory_order_acquire); }

}  // namespace tropical::jit
