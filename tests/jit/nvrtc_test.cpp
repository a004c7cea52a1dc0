#include "tropical/jit/nvrtc.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tropical/error.hpp"

namespace tropical::jit {
namespace {

// A KernelSource views its strings; this keeps them alive.
struct OwnedKernel {
  std::string name;
  std::string source;
  KernelSource view() const { return {0, name, source, {}}; }
};

OwnedKernel scale_kernel(const std::string& name) {
  return {name, "extern \"C\" __global__ void " + name +
                    "(float* out, const float* a, int n) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < n) out[i] = a[i] * 2.0f + 1.0f;\n"
                    "}\n"};
}

bool maps_mention(const std::string& what) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find(what) != std::string::npos;
}

// The file behind the first mapping whose path mentions `what`, or "".
std::string mapped_file(const std::string& what) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const std::size_t slash = line.find('/');
    if (slash != std::string::npos && line.find(what, slash) != std::string::npos) return line.substr(slash);
  }
  return {};
}

// nvrtc_identity()'s format, computed independently: "<real file name>:<size>".
std::string identity_of_file(const std::string& path) {
  char resolved[PATH_MAX];
  struct stat st {};
  if (::realpath(path.c_str(), resolved) == nullptr || ::stat(resolved, &st) != 0)
    return "unreadable " + path;
  std::string name(resolved);
  name.erase(0, name.rfind('/') + 1);
  return name + ":" + std::to_string(static_cast<long long>(st.st_size));
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// Ends a death-test child: exit code 0 if no problem was found, else 1 with
// the problems on stderr, where the parent's failure message shows them.
[[noreturn]] void finish(const std::vector<std::string>& problems) {
  for (const std::string& p : problems) std::fprintf(stderr, "%s\n", p.c_str());
  std::fflush(stderr);
  std::_Exit(problems.empty() ? 0 : 1);
}

// These checks need a process that has not touched NVRTC yet. The
// "threadsafe" death-test style re-executes the test binary for the child,
// so the child starts fresh even after other tests in this binary compiled.
class FreshProcessDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST(CompileOptions, are_a_fixed_list_naming_the_arch) {
  const std::vector<std::string> expected = {"--gpu-architecture=sm_90", "--std=c++17", "--fmad=false",
                                             "--ftz=false"};
  EXPECT_EQ(compile_options(90), expected);
  EXPECT_EQ(compile_options(90), compile_options(90));
  EXPECT_EQ(compile_options(80).front(), "--gpu-architecture=sm_80");
  for (const std::string& option : compile_options(90)) {
    EXPECT_FALSE(contains(option, "fast-math") || contains(option, "use_fast_math")) << option;
  }
}

TEST(CompileOptions, an_arch_specific_kernel_is_compiled_for_sm_xya_on_its_arch_alone) {
  std::vector<std::string> expected = compile_options(90);
  expected.front() = "--gpu-architecture=sm_90a";
  EXPECT_EQ(compile_options(90, Effort::kFull, true), expected);
  const KernelSource specific{0, "k", "", "", 90}, portable{0, "k", "", ""};
  EXPECT_EQ(compile_options(specific, 90), expected);
  EXPECT_EQ(compile_options(specific, 80), compile_options(80));
  EXPECT_EQ(compile_options(specific, 100, Effort::kLight), compile_options(100, Effort::kLight));
  EXPECT_EQ(compile_options(portable, 90), compile_options(90));
}

TEST(CompileOptions, light_effort_adds_only_compile_time_options_to_the_full_list) {
  std::vector<std::string> expected = compile_options(90);
  expected.insert(expected.end(), {"--Ofast-compile=min", "--minimal"});
  EXPECT_EQ(compile_options(90, Effort::kLight), expected);
  EXPECT_EQ(compile_options(90, Effort::kFull), compile_options(90));
}

TEST_F(FreshProcessDeathTest, identity_is_found_without_loading_libnvrtc) {
  EXPECT_EXIT(
      {
        std::vector<std::string> problems;
        const std::string& identity = nvrtc_identity();
        if (identity.empty()) problems.push_back("nvrtc_identity() is empty");
        if (&nvrtc_identity() != &identity) problems.push_back("nvrtc_identity() is not cached");
        if (nvrtc_loaded()) problems.push_back("nvrtc_loaded() is true after nvrtc_identity()");
        if (maps_mention("libnvrtc")) problems.push_back("libnvrtc is mapped after nvrtc_identity()");
        finish(problems);
      },
      ::testing::ExitedWithCode(0), "");
}

// TROPICAL_NVRTC=libnvrtc.so.13 (the bare soname, found through ld.so.cache) names the same
// file as its path does, not a second identity under which every entry would be compiled again.
TEST_F(FreshProcessDeathTest, bare_soname_gets_the_identity_of_the_file_the_loader_loads) {
  EXPECT_EXIT(
      {
        std::vector<std::string> problems;
        ::setenv("TROPICAL_NVRTC", "libnvrtc.so.13", 1);
        const OwnedKernel k = scale_kernel("tropical_probe_bare_soname");
        try {
          (void)compile(k.view(), 90);
        } catch (const std::exception&) {
          finish(problems);  // the loader cannot find it by name either: nothing to compare
        }
        const std::string loaded = mapped_file("/libnvrtc.so");
        if (identity_of_file(loaded) != nvrtc_identity()) {
          problems.push_back("identity " + nvrtc_identity() + " but loaded " + loaded);
        }
        finish(problems);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(FreshProcessDeathTest, first_compile_loads_the_libnvrtc_its_identity_names) {
  EXPECT_EXIT(
      {
        std::vector<std::string> problems;
        (void)compile_options(90);
        (void)nvrtc_identity();
        if (nvrtc_loaded() || maps_mention("libnvrtc"))
          problems.push_back("libnvrtc loaded before any compile");
        const OwnedKernel k = scale_kernel("tropical_probe_first_load");
        try {
          (void)compile(k.view(), 90);
        } catch (const std::exception& e) {
          problems.push_back(std::string("compile threw: ") + e.what());
        }
        if (!nvrtc_loaded()) problems.push_back("nvrtc_loaded() is false after a compile");
        if (!maps_mention("libnvrtc")) problems.push_back("libnvrtc is not mapped after a compile");
        // The identity in cache keys names the library that actually compiled.
        const std::string loaded = mapped_file("/libnvrtc.so");
        if (identity_of_file(loaded) != nvrtc_identity()) {
          problems.push_back("identity " + nvrtc_identity() + " but loaded " + loaded);
        }
        finish(problems);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(FreshProcessDeathTest, missing_override_throws_unavailable_every_time) {
  EXPECT_EXIT(
      {
        std::vector<std::string> problems;
        const std::string path = "/nonexistent/tropical/libnvrtc-test.so";
        ::setenv("TROPICAL_NVRTC", path.c_str(), 1);
        if (nvrtc_identity() != path)
          problems.push_back("identity ignores $TROPICAL_NVRTC: " + nvrtc_identity());
        const OwnedKernel k = scale_kernel("tropical_probe_missing");
        for (int attempt = 0; attempt < 2; ++attempt) {
          try {
            (void)compile(k.view(), 90);
            problems.push_back("compile succeeded without libnvrtc");
          } catch (const Unavailable& e) {
            if (e.code() != Errc::kUnavailable) problems.push_back("wrong error code");
            if (!contains(e.what(), path) || !contains(e.what(), "TROPICAL_NVRTC")) {
              problems.push_back(std::string("message does not name what was tried: ") + e.what());
            }
          } catch (const std::exception& e) {
            problems.push_back(std::string("not Unavailable: ") + e.what());
          }
        }
        try {
          (void)nvrtc_version();
          problems.push_back("nvrtc_version succeeded without libnvrtc");
        } catch (const Unavailable&) {
        }
        if (nvrtc_loaded()) problems.push_back("nvrtc_loaded() is true although nothing loaded");
        finish(problems);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(NvrtcVersion, is_major_dot_minor_of_release_13) {
  const std::string version = nvrtc_version();
  EXPECT_EQ(version.rfind("13.", 0), 0u) << version;
  EXPECT_TRUE(nvrtc_loaded());
}

TEST(SupportedArchs, are_ascending_and_include_the_archs_the_catalog_is_tested_for) {
  const std::vector<int> archs = supported_archs();
  EXPECT_TRUE(std::is_sorted(archs.begin(), archs.end()));
  for (const int arch : {80, 90}) {
    EXPECT_NE(std::find(archs.begin(), archs.end(), arch), archs.end()) << arch;
  }
  EXPECT_EQ(std::find(archs.begin(), archs.end(), 50), archs.end()) << "NVRTC 13 dropped sm_50";
}

TEST(Compile, produces_elf_cubin_and_ptx_for_sm80_and_sm90) {
  const OwnedKernel k = scale_kernel("tropical_probe_scale");
  for (const int arch : {80, 90}) {
    const CompiledImage image = compile(k.view(), arch);
    ASSERT_GT(image.cubin.size(), 4u) << arch;
    EXPECT_EQ(image.cubin[0], std::byte{0x7f});
    EXPECT_EQ(image.cubin[1], std::byte{'E'});
    EXPECT_EQ(image.cubin[2], std::byte{'L'});
    EXPECT_EQ(image.cubin[3], std::byte{'F'});
    EXPECT_TRUE(contains(image.ptx, ".entry tropical_probe_scale")) << image.ptx;
    EXPECT_TRUE(contains(image.ptx, ".target sm_" + std::to_string(arch))) << image.ptx;
    EXPECT_NE(image.ptx.back(), '\0');
  }
  EXPECT_TRUE(nvrtc_loaded());
}

TEST(Compile, keeps_multiply_and_add_separate_and_subnormals) {
  const OwnedKernel k{
      "tropical_probe_muladd",
      "extern \"C\" __global__ void tropical_probe_muladd(float* c, const float* a, const float* b) {\n"
      "  c[0] = a[0] * b[0] + c[0];\n"
      "}\n"};
  // Both efforts: a quick kernel must round exactly as the tuned one does.
  for (const Effort effort : {Effort::kFull, Effort::kLight}) {
    const CompiledImage image = compile(k.view(), 90, effort);
    EXPECT_TRUE(contains(image.ptx, "mul.rn.f32")) << image.ptx;
    EXPECT_TRUE(contains(image.ptx, "add.rn.f32")) << image.ptx;
    EXPECT_FALSE(contains(image.ptx, "fma.")) << image.ptx;
    EXPECT_FALSE(contains(image.ptx, ".ftz")) << image.ptx;
  }
}

TEST(Compile, syntax_error_throws_compile_error_with_log_and_options) {
  const OwnedKernel k{"tropical_probe_syntax",
                      "extern \"C\" __global__ void tropical_probe_syntax(float* out) {\n"
                      "  out[0] = 1.0f\n"
                      "}\n"};
  try {
    (void)compile(k.view(), 90);
    FAIL() << "a fragment with a syntax error compiled";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.code(), Errc::kCompile);
    EXPECT_EQ(e.kernel(), "tropical_probe_syntax");
    EXPECT_TRUE(contains(e.log(), "tropical_probe_syntax.cu(3): error")) << e.log();
    EXPECT_EQ(e.options(), compile_options(90));
    EXPECT_TRUE(contains(e.what(), "--fmad=false")) << e.what();
  }
}

TEST(Compile, a_warning_alone_throws_compile_error) {
  // NVRTC warns (#177-D) about a variable declared but never referenced, and
  // still reports NVRTC_SUCCESS.
  const OwnedKernel k{"tropical_probe_warning",
                      "extern \"C\" __global__ void tropical_probe_warning(float* out) {\n"
                      "  int never_used = 3;\n"
                      "  out[0] = 1.0f;\n"
                      "}\n"};
  try {
    (void)compile(k.view(), 90);
    FAIL() << "a fragment that NVRTC warns about was accepted";
  } catch (const CompileError& e) {
    EXPECT_TRUE(contains(e.log(), "warning")) << e.log();
    EXPECT_TRUE(contains(e.log(), "never_used")) << e.log();
    EXPECT_EQ(e.options(), compile_options(90));
  }
}

TEST(Compile, unsupported_arch_throws_compile_error) {
  const OwnedKernel k = scale_kernel("tropical_probe_old_arch");
  EXPECT_THROW((void)compile(k.view(), 50), CompileError);
}

TEST(Compile, sixteen_threads_compiling_different_sources_all_succeed) {
  constexpr int kThreads = 16;
  std::vector<OwnedKernel> kernels;
  for (int i = 0; i < kThreads; ++i)
    kernels.push_back(scale_kernel("tropical_probe_thread_" + std::to_string(i)));
  std::vector<CompiledImage> images(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      try {
        images[i] = compile(kernels[i].view(), i % 2 == 0 ? 90 : 80);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(errors[i], "") << "thread " << i;
    EXPECT_FALSE(images[i].cubin.empty()) << "thread " << i;
    EXPECT_TRUE(contains(images[i].ptx, ".entry " + kernels[i].name)) << "thread " << i;
  }
}

}  // namespace
}  // namespace tropical::jit
