// Must not compile with the public include path: a public header that reached the jit core's registry would
// make every program that includes tropical.hpp depend on the library's internals.
#include "tropical/tropical.hpp"
#include "tropical/jit/registry.hpp"
