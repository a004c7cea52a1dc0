// Must not compile with the storage's include path: the storage never includes the API.
#include "tropical/storage/entry.hpp"
#include "tropical/gemm.hpp"
