// Opening the local store's directory: the policy checks, the fallback directory, the lock directory and
// the statistics file.
#include <algorithm>
#include <iterator>
#include <string_view>

#include "local_store_impl.hpp"

namespace tropical::storage {

LocalStore::Impl::Impl(CacheConfig c) : config(std::move(c)), name("local " + config.dir.string()) {
  if (!config.enabled) return;
  const std::optional<Trouble> trouble = open();
  if (!trouble) return;
  // A directory that cannot take entries (a read-only file system, an unwritable parent) gives way to a
  // private one, so that a container's first run is not every run's.
  if (trouble->fallback && config.fallback_dir && *config.fallback_dir != config.dir) {
    const std::filesystem::path original = config.dir;
    reset_directory(*config.fallback_dir);
    const std::optional<Trouble> second = open(true);
    const std::string first =
        "disk cache " + (original.empty() ? "(none)" : original.string()) + " " + trouble->message;
    if (!second) {
      fell_back_from = original;
      warn_once(Problem::kFallback, original.string(),
                "tropical: warning: " + first + "; using " + config.dir.string() + " instead\n");
      return;
    }
    reset_directory(config.dir);
    warn_once(Problem::kFallback, original.string(),
              "tropical: warning: " + first + ", and " + config.dir.string() + " " + second->message +
                  "; continuing with compiled images in memory only\n");
    return;
  }
  warn(trouble->problem,
       trouble->message + (trouble->problem == Problem::kUnusable ? "; continuing without it" : ""));
}

void LocalStore::Impl::reset_directory(const std::filesystem::path& to) {
  dir.reset();
  locks.reset();
  writable = false;
  config.dir = to;
  name = "local " + to.string();
}

namespace {

// Directories of the system that a mistyped --cache-dir (or a root shell's) must not turn into a cache: the
// store would add lock, statistics and entry files to them.
bool is_system_directory(const std::filesystem::path& dir) {
  static constexpr std::string_view kSystem[] = {"/",     "/bin",  "/boot", "/dev",  "/etc",  "/lib", "/lib32",
                                                 "/lib64", "/proc", "/run",  "/sbin", "/sys",  "/usr", "/var"};
  std::error_code ignored;
  const std::filesystem::path real = std::filesystem::weakly_canonical(dir, ignored).lexically_normal();
  for (const std::filesystem::path& path : {dir.lexically_normal(), real}) {
    std::string text = path.string();
    while (text.size() > 1 && text.back() == '/') text.pop_back();
    if (std::find(std::begin(kSystem), std::end(kSystem), text) != std::end(kSystem)) return true;
  }
  return false;
}

}  // namespace

std::optional<LocalStore::Impl::Trouble> LocalStore::Impl::open(bool private_only) {
  if (config.dir.empty()) {
    return Trouble{Problem::kUnusable, "unusable (no directory: set TROPICAL_CACHE_DIR or HOME)", true};
  }
  if (is_system_directory(config.dir)) {
    return Trouble{Problem::kUnusable, "unusable (a system directory, not a cache)", true};
  }
  // The fallback lives in a shared $TMPDIR: a link planted under its name must not steer our entries.
  local::Directory opened = local::open_directory(config.dir, private_only);
  if (opened.unusable) {
    return Trouble{Problem::kUnusable, "unusable (" + opened.unusable->reason() + ")", true};
  }
  struct stat st {};
  if (private_only && (::fstat(opened.fd.get(), &st) != 0 || (st.st_mode & 077) != 0 || opened.team)) {
    return Trouble{Problem::kUnusable, "is not a private 0700 directory of this user", true};
  }
  dir = std::move(opened.fd);
  team = opened.team;
  group = opened.group;
  network = opened.network;
  if (opened.refused) {
    return Trouble{
        Problem::kReadOnly,
        "cannot store entries (" + *opened.refused + "); entries already there are still read and verified",
        false};
  }
  if (auto failure = open_locks()) {
    // Entries may still be read (a read-only cache), but nothing can be stored.
    return Trouble{
        Problem::kReadOnly,
        "cannot store entries (" + failure->reason() + "); continuing with the entries already there",
        is_hard(failure->error)};
  }
  writable = true;
  if (auto failure = counters.open(dir.get(), kStatsWait, 0600, local::stats_file_name(team, network))) {
    count(kErrors);
    warn(Problem::kNoMachineStats, "has no machine-wide statistics (" + failure->reason() + ")");
  }
  return std::nullopt;
}

std::optional<Failure> LocalStore::Impl::open_locks() {
  // In a team directory each user has a lock directory: lock files stay of their user.
  const std::string locks_name = team ? "locks." + std::to_string(::geteuid()) : "locks";
  const auto open_locks_dir = [&] {
    locks.reset(::openat(dir.get(), locks_name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  };
  open_locks_dir();
  if (!locks.valid()) {
    if (::mkdirat(dir.get(), locks_name.c_str(), 0700) != 0 && errno != EEXIST) {
      return Failure{"creating the lock directory", errno};
    }
    open_locks_dir();
  }
  if (!locks.valid()) return Failure{"opening the lock directory", errno};
  struct stat st {};
  if (::fstat(locks.get(), &st) != 0) return Failure{"checking the lock directory", errno};
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Failure{"the lock directory belongs to another user or is writable by others", EPERM};
  }
  locks_dev = st.st_dev;
  locks_ino = st.st_ino;
  return std::nullopt;
}

}  // namespace tropical::storage
