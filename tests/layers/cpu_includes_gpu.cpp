// Must not compile with the CPU backend's include path: the CPU backend never includes the GPU path (no CUDA
// header is on its path, so the GPU API's header cannot be read).
#include "tropical/cpu/gemm.hpp"
#include "tropical/gemm.hpp"
