#include "tropical/jit/storage/store.hpp"

#include "tropical/jit/storage/sha256.hpp"

namespace tropical::jit {

StoreKey::StoreKey(const CacheKey& k)
    : key(k), serialized(k.serialize()), digest(Sha256::hex(Sha256::of(serialized))) {}

}  // namespace tropical::jit
