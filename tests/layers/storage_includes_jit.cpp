// Must not compile with the storage's include path: of the jit core the storage sees nothing (the image type
// it stores is its own).
#include "tropical/storage/entry.hpp"
#include "tropical/jit/nvrtc.hpp"
