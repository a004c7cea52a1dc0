// `tropical list`: the catalog, which kernels are cached for an arch, and every entry on disk.
#include <algorithm>
#include <cinttypes>
#include <string>
#include <string_view>
#include <vector>

#include "cache_entries.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "tropical/catalog_sources.hpp"
#include "tropical/jit/nvrtc.hpp"
#include "tropical/tropical.hpp"

namespace tropical::cli {

namespace {

/// The list's column for kernel id and arch: "cached" (a tuned entry this process loads), "quick" (only the
/// quick one), else why the entries there are not used ("other NVRTC", ...), else "-".
std::string_view state(const std::vector<CacheEntry>& entries, std::uint32_t id, int arch) {
  const CacheEntry* best = nullptr;
  for (const auto& e : entries) {
    if (e.id != id || e.arch != arch) continue;
    if (e.usable() && e.tier == jit::Tier::kTuned) return "cached";
    if (best == nullptr || (e.usable() && !best->usable()) ||
        (!best->usable() && !e.usable() && e.mismatch < best->mismatch)) {
      best = &e;
    }
  }
  if (best == nullptr) return "-";
  return best->usable() ? "quick" : mismatch_text(best->mismatch);
}

std::string entry_json(const CacheEntry& e) {
  return "{\"file\": " + json_quote(e.file) + ", \"arch\": " + std::to_string(e.arch) +
         ", \"tier\": " + json_quote(tier_name(e.tier)) + ", \"bytes\": " + std::to_string(e.bytes) +
         ", \"nvrtc\": " + json_quote(e.nvrtc) + ", \"usable\": " + (e.usable() ? "true" : "false") +
         ", \"mismatch\": " + std::string(mismatch_json(e.mismatch)) + "}";
}

std::string other_entry_json(const CacheEntry& e) {
  return "{\"file\": " + json_quote(e.file) + ", \"bytes\": " + std::to_string(e.bytes) +
         ", \"kernel\": " + (e.readable ? json_quote(e.kernel) : "null") +
         ", \"arch\": " + (e.readable ? std::to_string(e.arch) : "null") +
         ", \"nvrtc\": " + (e.readable ? json_quote(e.nvrtc) : "null") + "}";
}

/// One line per entry file: kernel, arch, tier, size, and whether this process uses it or why not.
std::string entries_text(const std::vector<CacheEntry>& entries, const std::string& dir) {
  std::string text = "entries in " + dir + " (this NVRTC: " + jit::nvrtc_identity() + "):\n";
  std::uint64_t bytes = 0;
  std::size_t usable = 0;
  for (const auto& e : entries) {
    bytes += e.bytes;
    usable += e.usable();
    const std::string kernel = e.readable ? e.kernel : "(header not readable)";
    const std::string arch = e.readable ? "sm_" + std::to_string(e.arch) : "-";
    std::string why(e.readable ? mismatch_text(e.mismatch) : "not used");
    if (e.mismatch == storage::KeyMismatch::kCompiler || (e.readable && !e.id)) why += ": " + e.nvrtc;
    text += format("  %-44s %-6s %-5s %9" PRIu64 " bytes  %.16s  %s\n", kernel.c_str(), arch.c_str(),
                   e.id ? tier_name(e.tier).data() : "-", e.bytes, e.file.c_str(), why.c_str());
  }
  if (entries.empty()) text += "  none\n";
  text +=
      format("%zu entries, %" PRIu64 " bytes; %zu usable by this process\n", entries.size(), bytes, usable);
  return text;
}

}  // namespace

int cmd_list(int argc, char** argv) {
  const Args args("list", argc, argv, {"--arch"}, {"--json", "--entries"});
  if (args.help()) {
    print(
        "usage: tropical list [--arch sm_XY] [--json | --entries]\n\n"
        "Prints every kernel of the catalog with its id, and whether the disk cache\n"
        "holds it for the arch (default: GPU 0's, else sm_90): cached, quick (only the\n"
        "quick tier), other NVRTC (only entries another NVRTC build made), other format,\n"
        "source or options, or -; then the entries this process cannot use, by cause.\n"
        "--entries: every entry file instead (kernel, arch, tier, bytes, file, usable or\n"
        "why not). Reads entry headers only and changes nothing; loads NVRTC only to\n"
        "check an --arch. --json: one object with every entry, fields in the README.\n");
    return kExitOk;
  }
  if (args.has("--json") && args.has("--entries"))
    throw UsageError{"list takes --json or --entries, not both"};
  const int arch = target_arch(args);
  const std::string dir = info().dir;
  const std::vector<CacheEntry> entries = cache_entries();
  if (args.has("--entries")) {
    print(entries_text(entries, dir));
    return kExitOk;
  }
  std::size_t cached = 0;
  std::size_t unusable = 0;
  for (const auto& e : entries) unusable += !e.usable();
  int width = 4;  // the name column fits the longest name
  for (const auto& k : catalog::kInfo) width = std::max(width, static_cast<int>(k.name.size()));
  std::string text =
      format("%3s  %-*s %-19s %-8s %-4s sm_%d\n", "id", width, "name", "op", "semiring", "type", arch);
  std::string json = "{\"schema\": 1, \"arch\": " + std::to_string(arch) +
                     ", \"cache_dir\": " + json_quote(dir) +
                     ", \"nvrtc\": " + json_quote(jit::nvrtc_identity()) +
                     ", \"entries\": " + std::to_string(entries.size()) +
                     ", \"unusable\": " + std::to_string(unusable) + ", \"kernels\": [";
  for (const auto& k : catalog::kInfo) {
    const auto id = static_cast<std::uint32_t>(k.id);
    const std::string_view here = state(entries, id, arch);
    const bool hit = here == "cached";
    cached += hit;
    // A device op without a semiring (the einsum's permute) shows "-" in that column.
    const std::string_view semiring = k.semiring.empty() ? std::string_view("-") : k.semiring;
    text += format("%3u  %-*.*s %-19.*s %-8.*s %-4.*s %.*s\n", id, width, static_cast<int>(k.name.size()),
                   k.name.data(), static_cast<int>(op_name(k.op).size()), op_name(k.op).data(),
                   static_cast<int>(semiring.size()), semiring.data(), static_cast<int>(k.type.size()),
                   k.type.data(), static_cast<int>(here.size()), here.data());
    std::string mine;
    for (const auto& e : entries) {
      if (e.id == id) mine += (mine.empty() ? "" : ", ") + entry_json(e);
    }
    json += std::string(id == 0 ? "" : ", ") + "{\"id\": " + std::to_string(id) +
            ", \"name\": " + json_quote(k.name) + ", \"op\": " + json_quote(op_name(k.op)) +
            ", \"semiring\": " + json_quote(k.semiring) + ", \"type\": " + json_quote(k.type) +
            ", \"cached\": " + (hit ? "true" : "false") + ", \"entries\": [" + mine + "]}";
  }
  std::string others;
  for (const auto& e : entries) {
    if (!e.id) others += (others.empty() ? "" : ", ") + other_entry_json(e);
  }
  json += "], \"cached\": " + std::to_string(cached) + ", \"other_entries\": [" + others + "]}\n";
  text +=
      format("%zu kernels, %zu cached for sm_%d in %s\n", catalog::kKernelCount, cached, arch, dir.c_str());
  if (unusable != 0) {
    text += format(
                "%zu of %zu entries are not used by this process (tropical list --entries shows each;\n"
                "tropical clear NAME... or tropical clear removes them):\n",
                unusable, entries.size()) +
            unusable_summary(entries, "  ");
  }
  print(args.has("--json") ? json : text);
  return kExitOk;
}

}  // namespace tropical::cli
