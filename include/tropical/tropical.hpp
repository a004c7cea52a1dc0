#pragma once

/// Everything a program needs: semiring tags, the typed products, the CPU
/// reference, warm-up and statistics.
#include "tropical/bits.hpp"
#include "tropical/catalog.hpp"
#include "tropical/counting.hpp"
#include "tropical/device_buffer.hpp"
#include "tropical/error.hpp"
#include "tropical/gemm.hpp"
#include "tropical/reference.hpp"
#include "tropical/runtime.hpp"
#include "tropical/semiring.hpp"
#include "tropical/version.hpp"
