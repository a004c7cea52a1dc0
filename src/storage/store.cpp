#include "tropical/storage/store.hpp"

#include <string>
#include <utility>

#include "tropical/storage/sha256.hpp"

namespace tropical::storage {

StoreKey::StoreKey(const CacheKey& k)
    : key(k), serialized(k.serialize()), digest(Sha256::hex(Sha256::of(serialized))) {}

StoreKey::StoreKey(const CacheKey& k, std::string s, std::string d)
    : key(k), serialized(std::move(s)), digest(std::move(d)) {}

Lookup entry_miss(EntryStatus status, std::uint64_t bytes) {
  switch (status) {
    case EntryStatus::kTooLarge:
      return Lookup{std::nullopt, Miss::kTooLarge,
                    "entry of " + std::to_string(bytes) + " bytes, over the bound of " +
                        std::to_string(kMaxEntryBytes)};
    case EntryStatus::kOtherFormat:
      return Lookup{std::nullopt, Miss::kOtherFormat, "entry of another format version"};
    case EntryStatus::kOtherKey:
      return Lookup{std::nullopt, Miss::kOtherKey, "entry of another key under this key's name"};
    case EntryStatus::kOk:
    case EntryStatus::kCorrupt:
      break;
  }
  return Lookup{std::nullopt, Miss::kCorrupt, "corrupt entry (truncated, extended or a checksum mismatch)"};
}

}  // namespace tropical::storage
