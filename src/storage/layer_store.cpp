#include "tropical/storage/layer_store.hpp"

#include <dirent.h>
#include <link.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>

#include "local_directory.hpp"
#include "tropical/storage/entry.hpp"
#include "tropical/storage/io.hpp"

namespace tropical::storage {
namespace {

bool trusted_owner(uid_t uid) { return uid == 0 || uid == ::geteuid(); }

}  // namespace

struct LayerStore::Impl {
  std::filesystem::path dir;
  std::string name;
  LogLevel log;
  Fd fd;  // invalid when missing or refused
  std::string status;
  std::atomic<std::uint64_t> hits{0};
  std::atomic<std::uint64_t> misses{0};

  Impl(std::filesystem::path d, LogLevel l, bool quiet)
      : dir(std::move(d)), name("layer " + dir.string()), log(l) {
    Fd opened(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    struct stat st {};
    if (!opened.valid()) {
      status = "refused: " + error_text(errno);
    } else if (::fstat(opened.get(), &st) != 0) {
      status = "refused: checking the directory: " + error_text(errno);
    } else if (!trusted_owner(st.st_uid)) {
      status = "refused: owned by uid " + std::to_string(st.st_uid) + ", neither root nor this user";
    } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      // Whoever can write the directory can plant entries: executable code.
      status = std::string("refused: writable by ") + ((st.st_mode & S_IWOTH) != 0 ? "others" : "its group");
    } else {
      fd = std::move(opened);
      status = "trusted (read-only)";
      return;
    }
    if (quiet) return;
    warn_once(Problem::kLayerRefused, dir.string(),
              "tropical: warning: cache layer " + dir.string() + " " + status + "; not used\n");
  }

  Lookup read(const StoreKey& key, ImageParts parts, bool count = true) {
    if (!fd.valid()) return Lookup{std::nullopt, Miss::kUnavailable, status};
    const std::string file = key.digest + std::string(local::kEntrySuffix);
    Fd entry(::openat(fd.get(), file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!entry.valid()) {
      if (errno == ENOENT) return Lookup{};
      return Lookup{std::nullopt, Miss::kRefused, "opening the entry: " + error_text(errno)};
    }
    struct stat st {};
    if (::fstat(entry.get(), &st) != 0 || !S_ISREG(st.st_mode))
      return Lookup{std::nullopt, Miss::kRefused, "not a regular file under the entry's name"};
    if (!trusted_owner(st.st_uid) || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
      return Lookup{std::nullopt, Miss::kRefused,
                    "entry owned by uid " + std::to_string(st.st_uid) + " or writable by others"};
    const auto size = static_cast<std::uint64_t>(st.st_size);
    EntryRead read = read_entry(entry.get(), size, key.serialized, parts);
    if (read.status != EntryStatus::kOk) return entry_miss(read.status, size);
    if (count) hits.fetch_add(1, std::memory_order_relaxed);
    return Lookup{std::move(read.image), Miss::kNoEntry, {}};
  }
};

LayerStore::LayerStore(std::filesystem::path dir, LogLevel log, bool quiet)
    : impl_(std::make_unique<Impl>(std::move(dir), log, quiet)) {}

LayerStore::~LayerStore() = default;

const std::string& LayerStore::name() const noexcept { return impl_->name; }

Lookup LayerStore::lookup(const StoreKey& key, ImageParts parts) { return impl_->read(key, parts); }

Lookup LayerStore::reread(const StoreKey& key) { return impl_->read(key, ImageParts::kCubinAndPtx, false); }

bool LayerStore::store(const StoreKey& key, const CompiledImage& image, StoreReason reason) {
  (void)key, (void)image, (void)reason;
  return false;
}

void LayerStore::count_miss(bool bad) {
  (void)bad;
  impl_->misses.fetch_add(1, std::memory_order_relaxed);
}

StoreInfo LayerStore::describe() const {
  StoreInfo info;
  info.kind = "layer";
  info.location = impl_->dir.string();
  info.usable = impl_->fd.valid();
  info.status = impl_->status;
  info.hits = impl_->hits.load();
  info.misses = impl_->misses.load();
  if (!info.usable) return info;
  const int fd = ::openat(impl_->fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* listing = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (listing == nullptr) {
    if (fd >= 0) ::close(fd);
    return info;
  }
  while (const dirent* item = ::readdir(listing)) {
    struct stat st {};
    if (local::is_entry_name(item->d_name) && ::fstatat(fd, item->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode)) {
      ++info.entries;
      info.bytes += static_cast<std::uint64_t>(st.st_size);
    }
  }
  ::closedir(listing);
  return info;
}

bool LayerStore::trusted() const noexcept { return impl_->fd.valid(); }

const std::filesystem::path& LayerStore::dir() const noexcept { return impl_->dir; }

std::filesystem::path prebuilt_layer_dir() {
#ifdef TROPICAL_PREBUILT_RELATIVE
  // The loaded object whose segments hold this function. Not dladdr(): it also looks for the nearest
  // symbol, a walk over every exported symbol of the library (the largest part of this call).
  struct Search {
    std::uintptr_t address;
    std::string file;
  } search{reinterpret_cast<std::uintptr_t>(&prebuilt_layer_dir), {}};
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto& s = *static_cast<Search*>(data);
        for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          const std::uintptr_t start = info->dlpi_addr + segment.p_vaddr;
          if (segment.p_type == PT_LOAD && s.address >= start && s.address - start < segment.p_memsz) {
            s.file = info->dlpi_name != nullptr ? info->dlpi_name : "";
            return 1;
          }
        }
        return 0;
      },
      &search);
  const std::filesystem::path library(search.file);
  if (!library.is_absolute()) return {};
  return (library.parent_path() / TROPICAL_PREBUILT_RELATIVE).lexically_normal();
#else
  return {};
#endif
}

}  // namespace tropical::storage
