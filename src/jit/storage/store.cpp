#include "tropical/jit/storage/store.hpp"

#include <utility>

#include "tropical/jit/storage/sha256.hpp"

namespace tropical::jit {

StoreKey::StoreKey(const CacheKey& k)
    : key(k), serialized(k.serialize()), digest(Sha256::hex(Sha256::of(serialized))) {}

StoreKey::StoreKey(const CacheKey& k, std::string s, std::string d)
    : key(k), serialized(std::move(s)), digest(std::move(d)) {}

}  // namespace tropical::jit
