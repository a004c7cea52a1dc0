#pragma once

// The exit guard lives with the storage (whose promotion thread it guards too); the jit core knows it
// by its old name.
#include "tropical/storage/exit_guard.hpp"

namespace tropical::jit {
namespace exit_guard = storage::exit_guard;
}  // namespace tropical::jit
