// Must not compile with the public include path: the API's internal headers are not reachable from it.
#include "tropical/tropical.hpp"
#include "tropical/internal/registry.hpp"
