// Must not compile with the jit core's include path: the jit core sees no public header but error.hpp (the
// exceptions it throws), so the API above it cannot be read.
#include "tropical/error.hpp"
#include "tropical/jit/registry.hpp"
#include "tropical/gemm.hpp"
