#include "tropical/jit/disk_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>

#include "tropical/jit/sha256.hpp"

namespace tropical::jit {
namespace {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------
// Layout of an entry file, all integers little-endian:
//   magic[8] | u32 format version | u32 flags (0) | u64 key size | u64 cubin size
//   | u64 ptx size | SHA-256 of ptx | SHA-256 of (bytes 0..71 + key + cubin) | key | cubin | ptx
// Two checksums, so that a load that needs no PTX (the usual one: PTX matters
// only when the driver refuses the CUBIN) neither reads nor hashes it. The
// main checksum covers every header byte, the PTX checksum and the PTX size
// included, so a CUBIN-only load still verifies the whole header, and the file
// size it checks against the header covers the PTX region too.
constexpr std::array<char, 8> kEntryMagic = {'T', 'R', 'O', 'P', 'J', 'I', 'T', '\n'};
constexpr std::size_t kPtxChecksumOffset = 40;
constexpr std::size_t kChecksumOffset = kPtxChecksumOffset + 32;
constexpr std::size_t kHeaderSize = kChecksumOffset + 32;
constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{1} << 31;
constexpr std::string_view kEntrySuffix = ".entry";
constexpr std::string_view kTempPrefix = "tmp.";
constexpr auto kStaleTempAge = std::chrono::hours(1);

// 256 lock stripes, chosen by the first byte of the key digest.
constexpr std::size_t kStripes = 256;

// The machine-wide counters: a page-sized file of u64 words, word 0 a magic
// that names the layout, word 1 + Counter the counters.
enum Counter : std::size_t {
  kHits,
  kMisses,
  kCompiles,
  kEvictions,
  kErrors,
  kBytesWritten,
  kBytesRead,
  kCompileNs,
  kLoadNs,
  kCounterCount,
};
constexpr std::uint64_t kStatsMagic = 0x0131'5453'5052'5401;  // "\1TRPST1\1", layout 1
constexpr std::size_t kStatsFileSize = 4096;
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free,
              "machine-wide counters live in shared memory and must not need a lock");
static_assert(std::atomic_ref<std::uint64_t>::required_alignment <= alignof(std::uint64_t));
static_assert((1 + kCounterCount) * sizeof(std::uint64_t) <= kStatsFileSize);

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void put_u32_at(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

void put_u64_at(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::uint32_t get_u32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{p[i]} << (8 * i);
  return v;
}

std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

void put_field(std::string& out, std::string_view field) {
  put_u64(out, field.size());
  out.append(field);
}

std::span<const std::byte> as_bytes(const std::uint8_t* p, std::size_t n) {
  return std::as_bytes(std::span<const std::uint8_t>(p, n));
}

// The main checksum covers the header up to itself, the key and the CUBIN.
Sha256::Digest entry_checksum(const std::uint8_t* header, std::span<const std::byte> key,
                              std::span<const std::byte> cubin) {
  Sha256 sha;
  sha.update(as_bytes(header, kChecksumOffset));
  sha.update(key);
  sha.update(cubin);
  return sha.digest();
}

std::uint64_t nanoseconds_since(Clock::time_point start) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
}

bool is_entry_name(std::string_view name) {
  if (name.size() != 64 + kEntrySuffix.size() || !name.ends_with(kEntrySuffix)) return false;
  return std::all_of(name.begin(), name.begin() + 64,
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::size_t stripe_index(std::string_view hex_digest) {
  const auto nibble = [](char c) { return static_cast<std::size_t>(c <= '9' ? c - '0' : c - 'a' + 10); };
  return nibble(hex_digest[0]) * 16 + nibble(hex_digest[1]);
}

std::string error_text(int error) { return std::error_code(error, std::generic_category()).message(); }

// ---------------------------------------------------------------------------
// Small POSIX helpers.

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    reset(std::exchange(other.fd_, -1));
    return *this;
  }
  ~Fd() { reset(); }
  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  // Closes and reports the error close() returns (a delayed write error, on some file systems).
  int close() noexcept {
    const int fd = std::exchange(fd_, -1);
    return fd >= 0 && ::close(fd) != 0 ? errno : 0;
  }

 private:
  int fd_ = -1;
};

// Returns 0 or an errno value.
int write_all(int fd, const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

// Reads size bytes at offset. Returns 0, an errno value, or EIO if the file ends early.
int read_at(int fd, std::uint8_t* data, std::size_t size, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, data + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

// Creates dir and its missing parents, each 0700 whatever the umask. Returns 0 or an errno.
int make_private_directories(const std::filesystem::path& dir) {
  std::filesystem::path prefix;
  for (const auto& part : dir) {
    prefix /= part;
    if (part == "/" || part.empty()) continue;
    if (::mkdir(prefix.c_str(), 0700) == 0) {
      if (::chmod(prefix.c_str(), 0700) != 0) return errno;
    } else if (errno != EEXIST) {
      return errno;
    }
  }
  return 0;
}

// A failed disk operation: what was attempted and the errno it gave.
struct Failure {
  std::string what;
  int error = 0;
  std::string reason() const { return what + ": " + error_text(error); }
};

// Errors that say the directory as a whole cannot take writes; anything else
// (a full disk, a file size limit, one odd entry) may pass and is retried on the next store.
bool is_hard(int error) {
  return error == EACCES || error == EPERM || error == EROFS || error == ENOTDIR || error == ENOENT ||
         error == ELOOP;
}

// The kinds of problem a warning reports. Each is reported at most once per
// subject (a cache directory, a setting's value) per process: a problem keeps
// quiet after its first warning, but never hides a different one that comes later.
enum class Problem { kUnusable, kReadOnly, kStoreFailed, kNoMachineStats, kBadSize };

void warn_once(Problem problem, const std::string& subject, const std::string& line) {
  static std::mutex mutex;
  // Never destroyed: may be used during exit.
  static auto& warned = *new std::set<std::pair<Problem, std::string>>;
  {
    std::lock_guard lock(mutex);
    if (!warned.emplace(problem, subject).second) return;
  }
  std::fputs(line.c_str(), stderr);
}

void warn_once(const std::filesystem::path& dir, Problem problem, const std::string& message) {
  warn_once(problem, dir.string(), "tropical: warning: disk cache " + dir.string() + " " + message + "\n");
}

// ---------------------------------------------------------------------------
// Cross-process lock stripes.
//
// fcntl locks belong to the process, so two threads of one process would both
// "get" the same lock: a per-stripe mutex, one per lock file in the whole
// process (two DiskCache objects on one directory share it), serialises them
// first. Lock order: mutex, then fcntl lock. The lock file is opened and closed
// only while the mutex is held, because closing any descriptor of a file drops
// every fcntl lock the process holds on it.
//
// The lock is an fcntl(F_SETLKW) write lock, the mechanism under
// boost::interprocess::file_lock (released by the kernel when its holder
// dies; a named_mutex is not), called directly because Boost 1.81's file_lock
// throws on EINTR and on a spurious EDEADLK instead of waiting, and opens its
// file without O_CLOEXEC and O_NOFOLLOW.
std::mutex* stripe_mutex(dev_t locks_dev, ino_t locks_ino, std::size_t index) {
  static std::mutex table_mutex;
  // Never destroyed: a thread may still be resolving a kernel while the process exits.
  static auto& table = *new std::map<std::tuple<dev_t, ino_t, std::size_t>, std::unique_ptr<std::mutex>>;
  std::lock_guard lock(table_mutex);
  auto& mutex = table[{locks_dev, locks_ino, index}];
  if (!mutex) mutex = std::make_unique<std::mutex>();
  return mutex.get();
}

// Returns 0 or an errno value.
int lock_file(int fd) {
  struct flock request {};
  request.l_type = F_WRLCK;
  request.l_whence = SEEK_SET;
  auto backoff = std::chrono::milliseconds(1);
  for (;;) {
    if (::fcntl(fd, F_SETLKW, &request) == 0) return 0;
    if (errno == EINTR) continue;
    if (errno == EDEADLK) {
      // The kernel sees processes, not threads: thread A1 holding stripe 1 while
      // A2 waits for stripe 2, held by B, which waits for stripe 1, looks like a
      // cycle. It is not one (A1 finishes without taking another lock), so wait and retry.
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(50));
      continue;
    }
    return errno;
  }
}

// Holds a stripe's in-process mutex and its cross-process lock; the kernel
// releases the latter if the process dies, SIGKILL included.
class StripeLock {
 public:
  StripeLock() = default;
  StripeLock(const StripeLock&) = delete;
  StripeLock& operator=(const StripeLock&) = delete;
  ~StripeLock() { unlock(); }

  std::optional<Failure> lock(std::mutex& mutex, int locks_dir, const char* name) {
    std::unique_lock mutex_lock(mutex);
    for (int attempt = 0; attempt < 100; ++attempt) {
      Fd fd(::openat(locks_dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!fd.valid()) return Failure{std::string("opening lock file ") + name, errno};
      struct stat locked {};
      if (::fstat(fd.get(), &locked) != 0) return Failure{std::string("checking lock file ") + name, errno};
      if (!S_ISREG(locked.st_mode) || locked.st_uid != ::geteuid()) {
        return Failure{std::string("lock file ") + name + " is not a regular file of this user", EPERM};
      }
      if (const int error = lock_file(fd.get()); error != 0) {
        return Failure{std::string("locking ") + name, error};
      }
      // Lock files are never removed, but if one was replaced while this process
      // waited, the lock is on a file nobody else will lock: take the new one.
      struct stat named {};
      if (::fstatat(locks_dir, name, &named, AT_SYMLINK_NOFOLLOW) == 0 && named.st_dev == locked.st_dev &&
          named.st_ino == locked.st_ino) {
        fd_ = std::move(fd);
        mutex_lock_ = std::move(mutex_lock);
        return std::nullopt;
      }
    }
    return Failure{std::string("lock file ") + name + " keeps being replaced", EAGAIN};
  }

  // Closing the descriptor releases the fcntl lock; only then may another thread open the file.
  void unlock() noexcept {
    if (!mutex_lock_.owns_lock()) return;
    fd_.reset();
    mutex_lock_.unlock();
  }

 private:
  std::unique_lock<std::mutex> mutex_lock_;
  Fd fd_;
};

// ---------------------------------------------------------------------------
// A temporary file in the cache directory that becomes an entry by rename, or
// disappears if it never gets there.
class AtomicFile {
 public:
  AtomicFile(int dir, std::string final_name) : dir_(dir), final_name_(std::move(final_name)) {}
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile() {
    if (!temp_name_.empty() && !committed_) {
      fd_.reset();
      ::unlinkat(dir_, temp_name_.c_str(), 0);
    }
  }

  std::optional<Failure> create() {
    static std::atomic<std::uint64_t> counter{0};
    // pid + thread + counter is unique among live writers; O_EXCL guards against a
    // leftover of a dead process whose pid was reused.
    for (int attempt = 0; attempt < 64; ++attempt) {
      std::string name = std::string(kTempPrefix) + std::to_string(::getpid()) + "." +
                         std::to_string(::gettid()) + "." + std::to_string(counter.fetch_add(1));
      const int fd = ::openat(dir_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0 && errno == EEXIST) continue;
      if (fd < 0) return Failure{"creating a temporary file", errno};
      fd_.reset(fd);
      temp_name_ = std::move(name);
      // The umask may have taken bits off 0600; entries are exactly 0600.
      if (::fchmod(fd, 0600) != 0) return Failure{"setting the mode of a temporary file", errno};
      return std::nullopt;
    }
    return Failure{"creating a temporary file", EEXIST};
  }

  std::optional<Failure> write(const std::uint8_t* data, std::size_t size) {
    if (const int error = write_all(fd_.get(), data, size); error != 0) {
      return Failure{"writing a temporary file", error};
    }
    return std::nullopt;
  }

  // The data must be on disk before the rename makes it visible: otherwise a
  // power loss can leave a renamed entry whose blocks were never written.
  std::optional<Failure> sync() {
    if (::fsync(fd_.get()) != 0) return Failure{"syncing a temporary file", errno};
    if (const int error = fd_.close(); error != 0) return Failure{"closing a temporary file", error};
    return std::nullopt;
  }

  // Atomically replaces whatever has the final name (an old, bad or foreign entry).
  std::optional<Failure> commit() {
    if (::renameat(dir_, temp_name_.c_str(), dir_, final_name_.c_str()) != 0) {
      return Failure{"renaming an entry into place", errno};
    }
    committed_ = true;
    return std::nullopt;
  }

 private:
  int dir_;
  std::string final_name_;
  std::string temp_name_;
  Fd fd_;
  bool committed_ = false;
};

struct DirEntry {
  std::string name;
  std::uint64_t size = 0;
  timespec mtime{};
};

bool older(const timespec& a, const timespec& b) {
  return a.tv_sec != b.tv_sec ? a.tv_sec < b.tv_sec : a.tv_nsec < b.tv_nsec;
}

// A whole number of bytes, optionally followed by K, M, G or T, alone or with B
// or iB, in any case; every one of them a power of 1024.
std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::uint64_t value = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (i == 0) return std::nullopt;
  std::string suffix(text.substr(i));
  for (char& c : suffix) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (suffix.empty()) return value;
  const std::size_t unit = std::string_view("kmgt").find(suffix.front());
  const std::string_view rest = std::string_view(suffix).substr(1);
  if (unit == std::string_view::npos || !(rest.empty() || rest == "b" || rest == "ib")) return std::nullopt;
  const int shift = 10 * static_cast<int>(unit + 1);
  if (value > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::nullopt;
  return value << shift;
}

bool is_false_word(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return lower.empty() || lower == "0" || lower == "false" || lower == "no" || lower == "off";
}

std::string_view env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string_view(value) : std::string_view();
}

std::filesystem::path home_directory() {
  if (const auto home = env("HOME"); !home.empty()) return std::filesystem::path(home);
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(size > 0 ? static_cast<std::size_t>(size) : 16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr && found->pw_dir[0] != '\0') {
    return std::filesystem::path(found->pw_dir);
  }
  return {};
}

}  // namespace

// ---------------------------------------------------------------------------

std::string CacheKey::serialize() const {
  std::string out;
  put_field(out, "tropical.jit.CacheKey");
  put_u32(out, kCacheFormatVersion);
  put_field(out, kernel_name);
  put_field(out, source_digest);
  put_u64(out, options.size());
  for (const auto& option : options) put_field(out, option);
  put_u64(out, static_cast<std::uint64_t>(static_cast<std::int64_t>(arch)));
  put_field(out, compiler);
  return out;
}

std::string CacheKey::digest() const { return Sha256::hex(Sha256::of(serialize())); }

CacheConfig CacheConfig::from_env() {
  CacheConfig config;
  if (const auto dir = env("TROPICAL_CACHE_DIR"); !dir.empty()) {
    std::error_code ignored;
    config.dir = std::filesystem::absolute(std::filesystem::path(dir), ignored);
    if (config.dir.empty()) config.dir = std::filesystem::path(dir);
  } else if (const auto xdg = env("XDG_CACHE_HOME"); !xdg.empty() && xdg.front() == '/') {
    // The XDG base directory spec says to ignore a relative XDG_CACHE_HOME.
    config.dir = std::filesystem::path(xdg) / "tropical";
  } else if (const auto home = home_directory(); !home.empty()) {
    config.dir = home / ".cache" / "tropical";
  }
  if (const auto size = env("TROPICAL_CACHE_MAX_SIZE"); !size.empty()) {
    if (const auto bytes = parse_size(size)) {
      config.max_bytes = *bytes;
    } else {
      // Every product builds the process-wide registry from this configuration,
      // and a cache problem must never fail the caller: warn and keep the default.
      static_assert(kDefaultCacheMaxBytes == 1ull << 30, "the warning names the default");
      std::string shown(size);
      for (char& c : shown) c = static_cast<char>(c < 0x20 || c == 0x7f ? '?' : c);
      warn_once(
          Problem::kBadSize, std::string(size),
          "tropical: warning: TROPICAL_CACHE_MAX_SIZE='" + shown +
              "' is not a size (bytes, or with K/M/G/T, KB/MB/GB/TB, KiB/MiB/GiB/TiB, all powers of 1024);"
              " using the default 1G\n");
    }
  }
  config.enabled = is_false_word(env("TROPICAL_CACHE_DISABLE"));
  return config;
}

// ---------------------------------------------------------------------------

struct DiskCache::Impl {
  CacheConfig config;
  Fd dir;    // the cache directory; invalid when it could not be used at all
  Fd locks;  // <dir>/locks
  std::atomic<bool> writable{false};
  std::uint64_t* machine = nullptr;  // the mapped stats file, or null
  std::array<std::atomic<std::uint64_t>, kCounterCount> process{};
  dev_t locks_dev = 0;
  ino_t locks_ino = 0;
  std::array<std::atomic<std::mutex*>, kStripes> stripe_mutexes{};

  enum class Found { kEntry, kAbsent, kBad };
  struct Lookup {
    Found found = Found::kAbsent;
    std::optional<CompiledImage> image;
  };

  explicit Impl(CacheConfig c) : config(std::move(c)) {
    if (!config.enabled) return;
    if (config.dir.empty()) {
      warn_once("(none)", Problem::kUnusable,
                "unusable (no directory: set TROPICAL_CACHE_DIR or HOME); continuing without it");
      return;
    }
    if (auto failure = open_directory()) {
      warn_once(config.dir, Problem::kUnusable,
                "unusable (" + failure->reason() + "); continuing without it");
      dir.reset();
      return;
    }
    if (auto failure = open_locks()) {
      // Entries may still be read (a read-only cache), but nothing can be stored.
      warn_read_only(*failure);
    } else {
      writable = true;
    }
    if (writable) map_stats();
  }

  ~Impl() {
    if (machine != nullptr) ::munmap(machine, kStatsFileSize);
  }

  std::optional<Failure> open_directory() {
    if (const int error = make_private_directories(config.dir); error != 0) {
      return Failure{"creating the directory", error};
    }
    dir.reset(::open(config.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) return Failure{"opening the directory", errno};
    struct stat st {};
    if (::fstat(dir.get(), &st) != 0) return Failure{"checking the directory", errno};
    if (st.st_uid != ::geteuid()) return Failure{"the directory belongs to another user", EPERM};
    return std::nullopt;
  }

  std::optional<Failure> open_locks() {
    if (::mkdirat(dir.get(), "locks", 0700) != 0 && errno != EEXIST) {
      return Failure{"creating the lock directory", errno};
    }
    locks.reset(::openat(dir.get(), "locks", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!locks.valid()) return Failure{"opening the lock directory", errno};
    struct stat st {};
    if (::fstat(locks.get(), &st) != 0) return Failure{"checking the lock directory", errno};
    if (st.st_uid != ::geteuid()) return Failure{"the lock directory belongs to another user", EPERM};
    locks_dev = st.st_dev;
    locks_ino = st.st_ino;
    return std::nullopt;
  }

  // Gives the first size bytes of the file disk blocks (growing it with zeros
  // if it is shorter), for the mapping: a page that only a sparse hole backs
  // needs a block at its first store, and on a full disk or quota the kernel
  // answers that store with SIGBUS, not an error. Allocating never changes the
  // bytes already there, so racing creators cannot wipe each other's counts
  // (glibc's fallback, where the file system cannot allocate, rewrites one zero
  // byte per block, at the end of the page, which holds no counter). Returns 0 or an errno.
  static int reserve(int fd, std::size_t size) {
    int error = 0;
    do {
      error = ::posix_fallocate(fd, 0, static_cast<off_t>(size));
    } while (error == EINTR);
    return error;
  }

  // Without the stats file the cache still works; only machine_stats() reads zeros.
  void map_stats() {
    Fd fd(::openat(dir.get(), "stats", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    struct stat st {};
    std::optional<Failure> failure;
    if (!fd.valid()) {
      failure = Failure{"opening the statistics file", errno};
    } else if (::fstat(fd.get(), &st) != 0) {
      failure = Failure{"checking the statistics file", errno};
    } else if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
      failure = Failure{"the statistics file is not a regular file of this user", EPERM};
    } else if (const int error = reserve(fd.get(), kStatsFileSize); error != 0) {
      failure = Failure{"reserving space for the statistics file", error};
    }
    if (!failure) {
      void* map = ::mmap(nullptr, kStatsFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
      if (map == MAP_FAILED) {
        failure = Failure{"mapping the statistics file", errno};
      } else {
        auto* words = static_cast<std::uint64_t*>(map);
        std::uint64_t expected = 0;
        std::atomic_ref<std::uint64_t>(words[0]).compare_exchange_strong(expected, kStatsMagic);
        if (expected == 0 || expected == kStatsMagic) {
          machine = words;
          return;
        }
        ::munmap(map, kStatsFileSize);
        failure = Failure{"the statistics file has another layout", EPROTO};
      }
    }
    count(kErrors);
    warn_once(config.dir, Problem::kNoMachineStats,
              "has no machine-wide statistics (" + failure->reason() + ")");
  }

  void count(Counter counter, std::uint64_t n = 1) noexcept {
    process[counter].fetch_add(n, std::memory_order_relaxed);
    if (machine != nullptr) {
      std::atomic_ref<std::uint64_t>(machine[1 + counter]).fetch_add(n, std::memory_order_relaxed);
    }
  }

  void warn_read_only(const Failure& failure) const {
    warn_once(config.dir, Problem::kReadOnly,
              "cannot store entries (" + failure.reason() + "); continuing with the entries already there");
  }

  // Counts the failure, warns once, and stops writing if the directory cannot take writes.
  void report(const Failure& failure) {
    count(kErrors);
    if (is_hard(failure.error)) {
      writable = false;
      warn_read_only(failure);
    } else {
      warn_once(
          config.dir, Problem::kStoreFailed,
          "cannot store an entry (" + failure.reason() + "); continuing, compiled images stay in memory");
    }
  }

  // Reads and verifies one entry (the PTX only if asked) through a single
  // descriptor: an eviction that unlinks the file meanwhile cannot take the
  // bytes away. Counts hits only.
  Lookup read(const std::string& serialized_key, const std::string& name, ImageParts parts) {
    const auto start = Clock::now();
    // O_NONBLOCK: a FIFO planted under the entry's name must not block the reader.
    Fd fd(::openat(dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!fd.valid()) return {errno == ENOENT ? Found::kAbsent : Found::kBad, std::nullopt};
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
        (st.st_mode & 07777) != 0600 || st.st_size < static_cast<off_t>(kHeaderSize) ||
        static_cast<std::uint64_t>(st.st_size) > kMaxEntryBytes) {
      return {Found::kBad, std::nullopt};
    }
    // The header and key are read first and checked against the file size, so
    // a damaged size field cannot make the reader allocate or read nonsense;
    // then the payload goes straight into the image, without another copy.
    const auto size = static_cast<std::uint64_t>(st.st_size);
    const std::size_t head_size = kHeaderSize + serialized_key.size();
    if (size < head_size) return {Found::kBad, std::nullopt};
    std::vector<std::uint8_t> head(head_size);
    if (read_at(fd.get(), head.data(), head_size, 0) != 0) return {Found::kBad, std::nullopt};
    const std::uint8_t* p = head.data();
    const std::uint64_t cubin_size = get_u64(p + 24);
    const std::uint64_t ptx_size = get_u64(p + 32);
    const std::uint64_t payload = size - head_size;
    // Each size is checked against the file size first, so the sum cannot overflow.
    if (std::memcmp(p, kEntryMagic.data(), kEntryMagic.size()) != 0 || get_u32(p + 8) != kCacheFormatVersion ||
        get_u32(p + 12) != 0 || get_u64(p + 16) != serialized_key.size() ||
        std::memcmp(p + kHeaderSize, serialized_key.data(), serialized_key.size()) != 0 || cubin_size > payload ||
        ptx_size > payload || cubin_size + ptx_size != payload) {
      return {Found::kBad, std::nullopt};
    }
    CompiledImage image;
    image.cubin.resize(cubin_size);
    auto* cubin = reinterpret_cast<std::uint8_t*>(image.cubin.data());
    if (read_at(fd.get(), cubin, cubin_size, head_size) != 0) return {Found::kBad, std::nullopt};
    const Sha256::Digest checksum =
        entry_checksum(p, as_bytes(p + kHeaderSize, serialized_key.size()), as_bytes(cubin, cubin_size));
    if (std::memcmp(p + kChecksumOffset, checksum.data(), checksum.size()) != 0) {
      return {Found::kBad, std::nullopt};
    }
    std::uint64_t bytes_read = head_size + cubin_size;
    if (parts == ImageParts::kCubinAndPtx) {
      image.ptx.resize(ptx_size);
      auto* ptx = reinterpret_cast<std::uint8_t*>(image.ptx.data());
      if (read_at(fd.get(), ptx, ptx_size, head_size + cubin_size) != 0) return {Found::kBad, std::nullopt};
      const Sha256::Digest ptx_sum = Sha256::of(image.ptx);
      if (std::memcmp(p + kPtxChecksumOffset, ptx_sum.data(), ptx_sum.size()) != 0) {
        return {Found::kBad, std::nullopt};
      }
      bytes_read += ptx_size;
    }
    // Least-recently-used means recently read: a hit refreshes the mtime that
    // eviction sorts by. A read-only cache cannot, and still serves hits.
    ::futimens(fd.get(), nullptr);
    count(kHits);
    count(kBytesRead, bytes_read);
    count(kLoadNs, nanoseconds_since(start));
    return {Found::kEntry, std::move(image)};
  }

  // A failure means that no entry was stored: nothing reaches the entry's name before the rename.
  std::optional<Failure> store(const std::string& serialized_key, const std::string& name,
                               const CompiledImage& image) {
    const std::size_t size = kHeaderSize + serialized_key.size() + image.cubin.size() + image.ptx.size();
    if (size > kMaxEntryBytes) return Failure{"storing an entry larger than 2 GiB", EFBIG};
    std::vector<std::uint8_t> bytes(size);
    std::uint8_t* p = bytes.data();
    std::memcpy(p, kEntryMagic.data(), kEntryMagic.size());
    put_u32_at(p + 8, kCacheFormatVersion);
    put_u32_at(p + 12, 0);
    put_u64_at(p + 16, serialized_key.size());
    put_u64_at(p + 24, image.cubin.size());
    put_u64_at(p + 32, image.ptx.size());
    std::uint8_t* at = p + kHeaderSize;
    at = std::copy(serialized_key.begin(), serialized_key.end(), at);
    if (!image.cubin.empty()) std::memcpy(at, image.cubin.data(), image.cubin.size());
    at += image.cubin.size();
    std::copy(image.ptx.begin(), image.ptx.end(), at);
    // The PTX checksum first: the main checksum covers it.
    const Sha256::Digest ptx_sum = Sha256::of(image.ptx);
    std::copy(ptx_sum.begin(), ptx_sum.end(), p + kPtxChecksumOffset);
    const Sha256::Digest checksum =
        entry_checksum(p, as_bytes(p + kHeaderSize, serialized_key.size()),
                       as_bytes(p + kHeaderSize + serialized_key.size(), image.cubin.size()));
    std::copy(checksum.begin(), checksum.end(), p + kChecksumOffset);

    AtomicFile file(dir.get(), name);
    if (auto failure = file.create()) return failure;
    if (auto failure = file.write(p, size)) return failure;
    hook(WriteStage::kTempWritten);
    if (auto failure = file.sync()) return failure;
    hook(WriteStage::kSynced);
    if (auto failure = file.commit()) return failure;
    count(kBytesWritten, size);
    // The rename is durable only once the directory is synced. But the entry is
    // stored from the rename on, whole and loadable: a failed sync only risks
    // losing it to a crash, which costs a compile. So it is counted, not
    // reported, and the store (and the eviction after it) goes on.
    if (::fsync(dir.get()) != 0) count(kErrors);
    hook(WriteStage::kRenamed);
    return std::nullopt;
  }

  void hook(WriteStage stage) const {
    if (config.test_hook) config.test_hook(stage);
  }

  // Lists the entries (regular files only) and, if asked, removes temporary
  // files old enough that no live writer can own them.
  std::vector<DirEntry> scan(bool remove_stale_temps) const {
    std::vector<DirEntry> entries;
    const int fd = ::openat(dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return entries;
    DIR* listing = ::fdopendir(fd);
    if (listing == nullptr) {
      ::close(fd);
      return entries;
    }
    const auto stale_before = std::chrono::system_clock::now() - kStaleTempAge;
    while (const dirent* item = ::readdir(listing)) {
      const std::string_view name(item->d_name);
      struct stat st {};
      if (is_entry_name(name)) {
        if (::fstatat(fd, item->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
          entries.push_back({std::string(name), static_cast<std::uint64_t>(st.st_size), st.st_mtim});
        }
      } else if (remove_stale_temps && name.starts_with(kTempPrefix)) {
        if (::fstatat(fd, item->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec) < stale_before) {
          ::unlinkat(fd, item->d_name, 0);
        }
      }
    }
    ::closedir(listing);
    return entries;
  }

  // Unlinking is safe for readers: one that has the entry open keeps its bytes.
  void evict(const std::string& keep) {
    std::vector<DirEntry> entries = scan(true);
    std::uint64_t total = 0;
    for (const auto& entry : entries) total += entry.size;
    if (total <= config.max_bytes) return;
    std::sort(entries.begin(), entries.end(), [](const DirEntry& a, const DirEntry& b) {
      return older(a.mtime, b.mtime) || (!older(b.mtime, a.mtime) && a.name < b.name);
    });
    for (const auto& entry : entries) {
      if (total <= config.max_bytes) break;
      if (entry.name == keep) continue;
      // Another process may be evicting too; whoever unlinks the file counts it.
      if (::unlinkat(dir.get(), entry.name.c_str(), 0) == 0) count(kEvictions);
      total -= entry.size;
    }
  }

  std::optional<Failure> lock_stripe(std::size_t index, StripeLock& lock) {
    std::mutex* mutex = stripe_mutexes[index].load(std::memory_order_acquire);
    if (mutex == nullptr) {
      mutex = stripe_mutex(locks_dev, locks_ino, index);
      stripe_mutexes[index].store(mutex, std::memory_order_release);
    }
    char name[16];
    std::snprintf(name, sizeof name, "%02zx.lock", index);
    return lock.lock(*mutex, locks.get(), name);
  }

  CompiledImage compile_without_disk(const std::function<CompiledImage()>& compile, bool* compiled) {
    count(kMisses);
    const auto start = Clock::now();
    CompiledImage image = compile();
    count(kCompiles);
    count(kCompileNs, nanoseconds_since(start));
    if (compiled != nullptr) *compiled = true;
    return image;
  }

  CacheStats stats(bool machine_wide) const {
    std::array<std::uint64_t, kCounterCount> v{};
    for (std::size_t i = 0; i < kCounterCount; ++i) {
      if (!machine_wide) {
        v[i] = process[i].load(std::memory_order_relaxed);
      } else if (machine != nullptr) {
        v[i] = std::atomic_ref<std::uint64_t>(machine[1 + i]).load(std::memory_order_relaxed);
      }
    }
    return CacheStats{v[kHits],         v[kMisses],    v[kCompiles],  v[kEvictions], v[kErrors],
                      v[kBytesWritten], v[kBytesRead], v[kCompileNs], v[kLoadNs]};
  }
};

DiskCache::DiskCache(CacheConfig config) : impl_(new Impl(std::move(config))) {}

DiskCache::~DiskCache() { delete impl_; }

std::filesystem::path DiskCache::entry_path(const CacheKey& key) const {
  return impl_->config.dir / (key.digest() + std::string(kEntrySuffix));
}

std::optional<CompiledImage> DiskCache::load(const CacheKey& key, ImageParts parts) {
  Impl& s = *impl_;
  if (!s.dir.valid()) {
    s.count(kMisses);
    return std::nullopt;
  }
  const std::string serialized = key.serialize();
  Impl::Lookup lookup =
      s.read(serialized, Sha256::hex(Sha256::of(serialized)) + std::string(kEntrySuffix), parts);
  if (lookup.image) return std::move(lookup.image);
  s.count(kMisses);
  if (lookup.found == Impl::Found::kBad) s.count(kErrors);
  return std::nullopt;
}

CompiledImage DiskCache::get_or_compile(const CacheKey& key, const std::function<CompiledImage()>& compile,
                                        bool* compiled, ImageParts parts) {
  Impl& s = *impl_;
  if (compiled != nullptr) *compiled = false;
  if (!s.dir.valid()) return s.compile_without_disk(compile, compiled);

  const std::string serialized = key.serialize();
  const std::string digest = Sha256::hex(Sha256::of(serialized));
  const std::string name = digest + std::string(kEntrySuffix);
  Impl::Lookup first = s.read(serialized, name, parts);
  if (first.image) return std::move(*first.image);
  // A bad entry is counted once per call, even if the second look finds it again.
  bool bad = first.found == Impl::Found::kBad;
  if (!s.writable) {
    if (bad) s.count(kErrors);
    return s.compile_without_disk(compile, compiled);
  }

  StripeLock lock;
  if (auto failure = s.lock_stripe(stripe_index(digest), lock)) {
    if (bad) s.count(kErrors);
    s.report(*failure);
    return s.compile_without_disk(compile, compiled);
  }
  s.hook(WriteStage::kLocked);

  // Another process may have stored the entry while this one waited for the lock.
  Impl::Lookup second = s.read(serialized, name, parts);
  bad = bad || second.found == Impl::Found::kBad;
  if (bad) s.count(kErrors);
  if (second.image) return std::move(*second.image);

  s.count(kMisses);
  const auto start = Clock::now();
  CompiledImage image = compile();
  s.count(kCompiles);
  s.count(kCompileNs, nanoseconds_since(start));
  if (compiled != nullptr) *compiled = true;
  s.hook(WriteStage::kCompiled);

  auto store_failure = s.store(serialized, name, image);
  // Waiters may read the entry as soon as the lock goes; eviction needs no lock.
  lock.unlock();
  if (store_failure) {
    s.report(*store_failure);
  } else {
    s.evict(name);
  }
  return image;
}

CacheStats DiskCache::machine_stats() const { return impl_->stats(true); }

CacheStats DiskCache::process_stats() const { return impl_->stats(false); }

std::uint64_t DiskCache::clear() {
  Impl& s = *impl_;
  if (!s.dir.valid()) return 0;
  std::uint64_t removed = 0;
  const int fd = ::openat(s.dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  DIR* listing = ::fdopendir(fd);
  if (listing == nullptr) {
    ::close(fd);
    return 0;
  }
  std::vector<std::string> names;
  while (const dirent* item = ::readdir(listing)) {
    if (is_entry_name(item->d_name)) names.emplace_back(item->d_name);
  }
  ::closedir(listing);
  for (const auto& name : names) {
    if (::unlinkat(s.dir.get(), name.c_str(), 0) == 0) ++removed;
  }
  s.scan(true);
  return removed;
}

bool DiskCache::remove(const CacheKey& key) {
  Impl& s = *impl_;
  if (!s.dir.valid()) return false;
  const std::string name = key.digest() + std::string(kEntrySuffix);
  return ::unlinkat(s.dir.get(), name.c_str(), 0) == 0;
}

void DiskCache::zero_stats() {
  Impl& s = *impl_;
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    s.process[i].store(0, std::memory_order_relaxed);
    if (s.machine != nullptr) {
      std::atomic_ref<std::uint64_t>(s.machine[1 + i]).store(0, std::memory_order_relaxed);
    }
  }
}

CacheInfo DiskCache::info() const {
  const Impl& s = *impl_;
  CacheInfo info;
  info.dir = s.config.dir;
  info.enabled = enabled();
  info.max_bytes = s.config.max_bytes;
  if (s.dir.valid()) {
    for (const auto& entry : s.scan(false)) {
      ++info.entries;
      info.bytes += entry.size;
    }
  }
  return info;
}

bool DiskCache::enabled() const noexcept { return impl_->dir.valid() && impl_->writable.load(); }

}  // namespace tropical::jit
