// Must not compile with the CPU backend's include path: the CPU backend never includes the jit core.
#include "tropical/cpu/gemm.hpp"
#include "tropical/jit/registry.hpp"
