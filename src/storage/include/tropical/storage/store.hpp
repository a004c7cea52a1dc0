#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tropical/storage/image.hpp"
#include "tropical/storage/entry.hpp"
#include "tropical/storage/key.hpp"

namespace tropical::storage {

/// A key with its serialized bytes and digest, computed once per lookup and shared by every store.
struct StoreKey {
  /// Serializes and hashes key, which must outlive this object.
  explicit StoreKey(const CacheKey& key);
  /// The same from parts already computed: serialized and digest must be key's.
  StoreKey(const CacheKey& key, std::string serialized, std::string digest);
  const CacheKey& key;     ///< the key itself
  std::string serialized;  ///< key.serialize()
  std::string digest;      ///< hex SHA-256 of serialized
};

/// Why a store had no usable entry (for statistics and the decision log).
enum class Miss {
  kNoEntry,        ///< nothing under the key's name
  kOtherIdentity,  ///< nothing under the name, but an entry of this kernel and arch for another compiler,
                   ///< source, options or format (found only when the decision log is on)
  kCorrupt,        ///< an entry that failed verification
  kOtherKey,       ///< a sound entry of another key under this key's name
  kOtherFormat,    ///< an entry of another format version under this name
  kRefused,        ///< a file not of this user, not 0600, not a regular file, or unreadable
  kTooLarge,       ///< a file over kMaxEntryBytes, rejected unread
  kUnavailable,    ///< the store is disabled or unusable
};

/// One store's answer to a lookup: the image, or why there is none (and, for the log, in words).
struct Lookup {
  std::optional<CompiledImage> image;  ///< the verified image (PTX empty unless asked for)
  Miss miss = Miss::kNoEntry;          ///< meaningful without an image
  std::string detail;                  ///< what was found instead, for the decision log ("" if nothing)
  /// True for misses that met a bad file (counted as errors), false for a plain absence.
  bool bad() const noexcept {
    return miss != Miss::kNoEntry && miss != Miss::kOtherIdentity && miss != Miss::kUnavailable;
  }
};

/// The miss of an entry read whose status is not kOk, with the decision log's words; `bytes` is the
/// entry's size. Every store that reads entries reports their failures through it.
Lookup entry_miss(EntryStatus status, std::uint64_t bytes);

/// Why a store is written: after a compile, or to copy a hit of a lower store up (promotion).
enum class StoreReason { kCompiled, kPromoted };

/// A cross-process single flight taken for one key: held by the caller while it compiles and stores.
class Flight {
 public:
  virtual ~Flight() = default;
};

/// How a request for a key's single flight ended.
struct FlightResult {
  enum class State {
    kLeader,    ///< this caller holds the flight: look again, compile, store, then drop it
    kTimedOut,  ///< someone else held it past the store's bound: compile without storing
    kNone,      ///< the store cannot coordinate this key: compile without storing
  };
  State state = State::kNone;
  std::unique_ptr<Flight> held;  ///< while kLeader
  std::string why;               ///< for kTimedOut and kNone, for the decision log
  bool checked = false;          ///< kLeader: the store looked again under the flight and missed (no need to look)
};

/// What `tropical stats` shows of one store.
struct StoreInfo {
  std::string kind;           ///< "local", "layer", "remote", ...
  std::string location;       ///< a directory, a URL
  bool usable = false;        ///< false if refused, missing or unreachable
  bool writable = false;      ///< true if the store writes entries
  std::string status;         ///< "read-write", "trusted (read-only)", "refused: <why>", ...
  std::uint64_t entries = 0;  ///< entries present (0 if unknown)
  std::uint64_t bytes = 0;    ///< their total size
  std::uint64_t hits = 0;     ///< hits served (this process, or machine-wide where the store keeps them)
  std::uint64_t misses = 0;   ///< walks that found nothing here (same scope as hits)
};

/// One store of the cache: memory-backed, a local directory, a read-only layer, a remote. The registry's
/// walk (stores.hpp) asks the stores in order and never needs to know which kind each is. Implementations are
/// thread-safe and never throw for what their storage holds; a broken store degrades to missing, with at
/// most one warning per cause.
class Store {
 public:
  virtual ~Store() = default;
  /// Names the store in logs and statistics, e.g. "local /home/u/.cache/tropical".
  virtual const std::string& name() const noexcept = 0;
  /// The verified entry for key with the given parts, or why not; never waits for a writer. Counts the hit
  /// (and its bytes and time); a miss is counted by count_miss(), once per walk.
  virtual Lookup lookup(const StoreKey& key, ImageParts parts) = 0;
  /// True if a hit here can be read again by reread() (a directory on this machine): a copy of the hit
  /// into the stores above is then read by the background copier, and the caller reads only the parts it
  /// asked for. False (the default) where a second read costs (a remote): the caller reads it whole once.
  virtual bool rereadable() const noexcept { return false; }
  /// The verified entry for key, whole (CUBIN and PTX), for a copy into the stores above; not counted as a
  /// hit (the hit it copies was). Used only where rereadable(); default: a miss (kUnavailable).
  virtual Lookup reread(const StoreKey& key) {
    (void)key;
    return Lookup{std::nullopt, Miss::kUnavailable, "this store is not read again"};
  }
  /// True if store() may write (false for read-only layers and degraded stores).
  virtual bool can_store() const noexcept = 0;
  /// Writes image (whole: CUBIN and PTX) under key; returns false if nothing was stored (warned once).
  virtual bool store(const StoreKey& key, const CompiledImage& image, StoreReason reason) = 0;
  /// Housekeeping after a store, outside the single flight (eviction); default none.
  virtual void after_store(const StoreKey& key) { (void)key; }
  /// The key's cross-process single flight, waiting at most the store's bound; default kNone (no
  /// coordination).
  virtual FlightResult single_flight(const StoreKey& key) {
    (void)key;
    return {};
  }
  /// Counts one walk that found nothing usable here; bad says it met a bad file (an error).
  virtual void count_miss(bool bad) = 0;
  /// Counts one compile of compile_ns nanoseconds made to fill a miss of this store.
  virtual void count_compile(std::uint64_t compile_ns) = 0;
  /// What the store is and holds, for `tropical stats` (may list a directory); default: its name only.
  virtual StoreInfo describe() const {
    StoreInfo info;
    info.kind = name();
    info.usable = true;
    info.writable = can_store();
    return info;
  }
};

}  // namespace tropical::storage
