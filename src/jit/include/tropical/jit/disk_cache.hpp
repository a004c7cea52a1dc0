#pragma once

// The disk cache is the storage module set under tropical/storage/; this
// header keeps the names code written before the split includes.

#include "tropical/storage/config.hpp"
#include "tropical/storage/key.hpp"
#include "tropical/storage/local_store.hpp"
#include "tropical/storage/store_chain.hpp"

namespace tropical::jit {

/// The local directory store under its name before the storage split.
using DiskCache = storage::LocalStore;

}  // namespace tropical::jit
