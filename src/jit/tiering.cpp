#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "tropical/jit/tiers.hpp"

namespace tropical::jit {

TierMode tier_mode_from_env() noexcept {
  const char* value = std::getenv("TROPICAL_TIERED");
  if (value == nullptr) return TierMode::kTiered;
  std::string v(value);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (v == "0" || v == "false" || v == "no" || v == "off") return TierMode::kTunedOnly;
  return v == "quick" ? TierMode::kQuickOnly : TierMode::kTiered;
}

bool quick_takes_longer(const TierCost& cost, double macs, std::int64_t waited_ns) noexcept {
  if (cost.quick_macs_per_ns <= 0 || macs <= 0) return false;
  const double estimate_ns = cost.tuned_compile_ms * 1e6;
  const double remaining_ns = std::max(estimate_ns - static_cast<double>(waited_ns), estimate_ns / 4);
  return macs / cost.quick_macs_per_ns > remaining_ns;
}

}  // namespace tropical::jit
