// Must NOT compile: char is not an element type of the catalog.
#include "tropical/gemm.hpp"

void misuse(const char* a, const char* b, char* c) { tropical::gemm<tropical::MaxPlus, char>(1, 1, 1, a, b, c); }
