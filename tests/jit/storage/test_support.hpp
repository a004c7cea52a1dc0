// Helpers shared by the storage tests: keys and images, files, a fresh
// directory per test, forked children waited on with a bound.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "tropical/storage/local_store.hpp"
#include "tropical/storage/sha256.hpp"

namespace tropical::storage::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

inline CacheKey make_key(int i) {
  return CacheKey{"tropical_gemm_maxplus_f32_" + std::to_string(100 + i),
                  Sha256::hex(Sha256::of("fragment " + std::to_string(i))),
                  {"--gpu-architecture=sm_90", "-std=c++17", "-DTILE=" + std::to_string(100 + i)},
                  90,
                  "libnvrtc.so.13.0.88"};
}

inline CompiledImage make_image(int i, std::size_t cubin_size = 4096) {
  CompiledImage image;
  image.cubin.resize(cubin_size);
  for (std::size_t j = 0; j < cubin_size; ++j) {
    image.cubin[j] = static_cast<std::byte>((static_cast<std::size_t>(i) * 131 + j * 7 + (j >> 8)) & 0xff);
  }
  image.ptx = ".version 8.0\n.target sm_90\n// kernel " + std::to_string(100 + i) + "\n";
  return image;
}

inline bool same(const CompiledImage& a, const CompiledImage& b) {
  return a.cubin == b.cubin && a.ptx == b.ptx;
}

// What a hit returns with the default ImageParts::kCubin: the CUBIN, no PTX.
inline CompiledImage cubin_only(CompiledImage image) {
  image.ptx.clear();
  return image;
}

// What get_or_compile returns with the default parts: the whole image if it compiled, else the CUBIN alone.
inline CompiledImage expected(int i, bool compiled) {
  return compiled ? make_image(i) : cubin_only(make_image(i));
}

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

inline mode_t mode_of(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

inline void set_mtime(const fs::path& path, std::chrono::seconds ago) {
  timespec times[2];
  times[0].tv_sec = times[1].tv_sec = ::time(nullptr) - ago.count();
  times[0].tv_nsec = times[1].tv_nsec = 0;
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path;
}

// A fresh directory per test, removed afterwards.
class LocalStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tropical_storage_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    dir_ = root_ / "cache";
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  CacheConfig config(std::uint64_t max_bytes = 1ull << 30) const {
    CacheConfig c;
    c.dir = dir_;
    c.max_bytes = max_bytes;
    return c;
  }

  // The size of the entry file make_key(i) / make_image(i, cubin_size) produce.
  std::uint64_t entry_size(std::size_t cubin_size = 4096) const {
    CacheConfig c;
    c.dir = root_ / "measure";
    LocalStore cache(c);
    cache.get_or_compile(make_key(0), [&] { return make_image(0, cubin_size); });
    return fs::file_size(cache.entry_path(make_key(0)));
  }

  fs::path root_;
  fs::path dir_;
};

// A forked child running body() under an alarm, and waits on it bounded in time.
struct Outcome {
  bool timed_out = false;
  int exit_code = -1;  ///< the child's exit status, or -1 if it did not exit
  int signal = 0;      ///< the signal that ended it, or 0
  std::string err;     ///< what it wrote to stderr, if captured
};

class Child {
 public:
  explicit Child(const std::function<int()>& body, bool capture_stderr = false, unsigned alarm_s = 20) {
    int pipe_fds[2] = {-1, -1};
    if (capture_stderr && ::pipe(pipe_fds) != 0) std::abort();
    std::fflush(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) std::abort();
    if (pid_ == 0) {
      if (capture_stderr) {
        ::dup2(pipe_fds[1], STDERR_FILENO);
        ::close(pipe_fds[0]);
        ::close(pipe_fds[1]);
      }
      ::alarm(alarm_s);
      int code = 100;
      try {
        code = body();
      } catch (...) {
        code = 101;
      }
      std::fflush(nullptr);
      ::_exit(code);
    }
    if (capture_stderr) {
      ::close(pipe_fds[1]);
      err_fd_ = pipe_fds[0];
    }
  }

  Outcome wait(std::chrono::milliseconds timeout = 30s) {
    Outcome outcome;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    for (;;) {
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        outcome.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(2ms);
    }
    if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
    if (err_fd_ >= 0) {
      char buffer[4096];
      ssize_t n;
      while ((n = ::read(err_fd_, buffer, sizeof buffer)) > 0)
        outcome.err.append(buffer, static_cast<size_t>(n));
      ::close(err_fd_);
      err_fd_ = -1;
    }
    return outcome;
  }

 private:
  pid_t pid_ = -1;
  int err_fd_ = -1;
};

// Counters in memory shared with forked children.
class SharedCounters {
 public:
  explicit SharedCounters(std::size_t n) : n_(n) {
    void* map =
        ::mmap(nullptr, n * sizeof(std::uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) std::abort();
    words_ = static_cast<std::uint64_t*>(map);
  }
  ~SharedCounters() { ::munmap(words_, n_ * sizeof(std::uint64_t)); }
  SharedCounters(const SharedCounters&) = delete;
  SharedCounters& operator=(const SharedCounters&) = delete;
  std::uint64_t add(std::size_t i) { return std::atomic_ref<std::uint64_t>(words_[i]).fetch_add(1) + 1; }
  std::uint64_t get(std::size_t i) const { return std::atomic_ref<std::uint64_t>(words_[i]).load(); }

 private:
  std::size_t n_;
  std::uint64_t* words_;
};

// What a forked child exits with when the system lacks what its test needs.
inline constexpr int kChildCannotSetUp = 77;

// Writes text with one write(2), as /proc/self/uid_map wants. Returns whether it all went.
inline bool write_once(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// Mounts a tmpfs of size_option (such as "64k") at `at`, in a mount namespace of
// this process alone, so that it goes away when the process ends. For a forked,
// single-threaded child. Without root it enters a user namespace first, mapping
// its own uid and gid. Returns "" or what failed.
inline std::string mount_private_tmpfs(const fs::path& at, const std::string& size_option) {
  const auto failed = [](const std::string& what) { return what + ": " + std::strerror(errno); };
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWNS) != 0) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return failed("unshare");
    if (!write_once("/proc/self/setgroups", "deny") ||
        !write_once("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
        !write_once("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1")) {
      return failed("mapping the user namespace");
    }
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return failed("making mounts private");
  }
  const std::string options = "size=" + size_option + ",mode=0700";
  if (::mount("tmpfs", at.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    return failed("mounting a tmpfs");
  }
  return "";
}

// Writes zeros to a new file until the file system is full. Returns whether it got there.
inline bool fill_up(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const std::vector<char> zeros(4096);
  for (;;) {
    if (::write(fd, zeros.data(), zeros.size()) < 0) {
      const bool full = errno == ENOSPC;
      ::close(fd);
      return full;
    }
  }
}

// The descriptor this process has open on path (compared as the kernel names it), or -1.
inline int descriptor_of(const fs::path& path) {
  const fs::path wanted = fs::canonical(path);
  for (const auto& item : fs::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    if (fs::read_symlink(item.path(), error) == wanted) return std::stoi(item.path().filename().string());
  }
  return -1;
}

// From now on, fsync(fd) fails with EIO in this process, and every other call
// goes through (seccomp). The process makes only native system calls, so the
// filter needs no check of the architecture.
inline bool make_fsync_fail(int fd) {
  constexpr std::uint32_t kFirstArgLow =
      offsetof(seccomp_data, args) + (std::endian::native == std::endian::big ? 4 : 0);
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fsync, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kFirstArgLow),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(fd), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EIO),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

// Bytes this process has read through system calls so far (/proc/self/io rchar).
inline std::uint64_t bytes_read_by_process() {
  std::ifstream io("/proc/self/io");
  std::string name;
  std::uint64_t value = 0;
  while (io >> name >> value) {
    if (name == "rchar:") return value;
  }
  return 0;
}

// The status and modification time of path, to show a file was left alone.
struct Untouched {
  explicit Untouched(const fs::path& p) : path(p), bytes(read_file(p)) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0) {
      mtime = st.st_mtim;
      ino = st.st_ino;
    }
  }
  bool still() const {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && st.st_ino == ino && st.st_mtim.tv_sec == mtime.tv_sec &&
           st.st_mtim.tv_nsec == mtime.tv_nsec && read_file(path) == bytes;
  }
  fs::path path;
  std::string bytes;
  timespec mtime{};
  ino_t ino = 0;
};

}  // namespace tropical::storage::test
