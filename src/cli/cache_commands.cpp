// The subcommands that need no GPU: list, warm, stats, clear, compile.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "output.hpp"
#include "tropical/catalog_sources.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/tropical.hpp"

namespace tropical::cli {

namespace {

/// Architectures NVRTC 13 compiles for; probed for entries even without NVRTC.
constexpr int kKnownArchs[] = {75, 80, 86, 87, 89, 90, 100, 103, 110, 120, 121};

/// Kernel names one command line may list (a name may repeat).
constexpr std::size_t kMaxNames = 4096;

std::string format(const char* fmt, auto... args) {
  const int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string out(static_cast<std::size_t>(std::max(n, 0)), '\0');
  std::snprintf(out.data(), out.size() + 1, fmt, args...);
  return out;
}

/// Whether the entry of kernel id for arch is on disk, by name alone: nothing
/// is read, and no statistics or LRU time is touched.
bool entry_exists(std::uint32_t id, int arch, std::uint64_t* bytes = nullptr) {
  auto& reg = registry();
  std::error_code ec;
  const auto size = std::filesystem::file_size(reg.disk().entry_path(reg.cache_key(id, arch)), ec);
  if (ec) return false;
  if (bytes != nullptr) *bytes = size;
  return true;
}

bool cache_disabled_by_env() {
  const char* v = std::getenv("TROPICAL_CACHE_DISABLE");
  return v != nullptr && !info().enabled;
}

std::string stats_json(const jit::CacheStats& s) {
  return format("{\"hits\": %" PRIu64 ", \"misses\": %" PRIu64 ", \"compiles\": %" PRIu64
                ", \"evictions\": %" PRIu64 ", \"errors\": %" PRIu64 ", \"bytes_written\": %" PRIu64
                ", \"bytes_read\": %" PRIu64 ", \"compile_ns\": %" PRIu64 ", \"load_ns\": %" PRIu64 "}",
                s.hits, s.misses, s.compiles, s.evictions, s.errors, s.bytes_written, s.bytes_read,
                s.compile_ns, s.load_ns);
}

}  // namespace

std::uint32_t kernel_by_name(const std::string& name) {
  for (const auto& k : catalog::kInfo) {
    if (k.name == name) return static_cast<std::uint32_t>(k.id);
  }
  throw UsageError{"no kernel named '" + name + "' (see: tropical list)"};
}

int target_arch(const Args& args) {
  const bool given = args.has("--arch");
  const int arch = given ? parse_arch(args.get("--arch")) : (jit::driver::available() ? device_arch(0) : 90);
  std::vector<int> supported;
  try {
    supported = jit::supported_archs();
  } catch (const Unavailable&) {
    return arch;  // no NVRTC: commands that compile say so themselves
  }
  if (std::find(supported.begin(), supported.end(), arch) != supported.end()) return arch;
  const std::string why = "is not a target of NVRTC " + jit::nvrtc_version() + " (" + jit::nvrtc_identity() +
                          "), which compiles for " + arch_list(supported);
  if (given) throw UsageError{"--arch " + args.get("--arch") + " " + why};
  throw Unavailable("tropical: GPU 0 (sm_" + std::to_string(arch) + ") " + why);
}

std::vector<int> probe_archs() {
  std::vector<int> archs(std::begin(kKnownArchs), std::end(kKnownArchs));
  try {
    for (const int arch : jit::supported_archs()) archs.push_back(arch);
  } catch (const Unavailable&) {
    // Without NVRTC the known list is all there is.
  }
  std::sort(archs.begin(), archs.end());
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  return archs;
}

int cmd_list(int argc, char** argv) {
  const Args args("list", argc, argv, {"--arch"}, {"--json"});
  if (args.help()) {
    print(
        "usage: tropical list [--arch sm_XY] [--json]\n\n"
        "Prints every kernel of the catalog with its id, and whether the disk cache\n"
        "holds it for the arch (default: GPU 0's, else sm_90). Reads no entry; loads\n"
        "NVRTC only to check an --arch. --json: one object, fields in the README.\n");
    return kExitOk;
  }
  const int arch = target_arch(args);
  const std::string dir = info().dir.string();
  std::size_t cached = 0;
  std::string text =
      format("%3s  %-36s %-12s %-8s %-4s sm_%d\n", "id", "name", "op", "semiring", "type", arch);
  std::string json = "{\"schema\": 1, \"arch\": " + std::to_string(arch) +
                     ", \"cache_dir\": " + json_quote(dir) + ", \"kernels\": [";
  for (const auto& k : catalog::kInfo) {
    const auto id = static_cast<std::uint32_t>(k.id);
    const bool hit = entry_exists(id, arch);
    cached += hit;
    text += format("%3u  %-36.*s %-12.*s %-8.*s %-4.*s %s\n", id, static_cast<int>(k.name.size()),
                   k.name.data(), static_cast<int>(op_name(k.op).size()), op_name(k.op).data(),
                   static_cast<int>(k.semiring.size()), k.semiring.data(), static_cast<int>(k.type.size()),
                   k.type.data(), hit ? "cached" : "-");
    json += std::string(id == 0 ? "" : ", ") + "{\"id\": " + std::to_string(id) +
            ", \"name\": " + json_quote(k.name) + ", \"op\": " + json_quote(op_name(k.op)) +
            ", \"semiring\": " + json_quote(k.semiring) + ", \"type\": " + json_quote(k.type) +
            ", \"cached\": " + (hit ? "true" : "false") + "}";
  }
  text +=
      format("%zu kernels, %zu cached for sm_%d in %s\n", catalog::kKernelCount, cached, arch, dir.c_str());
  json += "], \"cached\": " + std::to_string(cached) + "}\n";
  print(args.has("--json") ? json : text);
  return kExitOk;
}

int cmd_warm(int argc, char** argv) {
  const Args args("warm", argc, argv, {"--arch", "-j"}, {"--all"}, kMaxNames);
  if (args.help()) {
    print(
        "usage: tropical warm [--arch sm_XY] [-j THREADS] (--all | NAME...)\n\n"
        "Compiles kernels into the disk cache for the arch (default: GPU 0's, else sm_90),\n"
        "on every core unless -j says otherwise. Needs no GPU. Progress goes to stderr: a\n"
        "bar on a terminal, one line per kernel otherwise; the summary to stdout. Exit 1\n"
        "if a kernel failed or could not be stored (cache disabled, unusable or too small).\n"
        "Tuned kernels only: with them in the cache a program never uses the quick tier.\n");
    return kExitOk;
  }
  if (args.has("--all") == !args.words().empty())
    throw UsageError{"warm wants --all or kernel names (not both)"};
  std::vector<catalog::KernelId> ids;
  for (const auto& name : args.words()) ids.push_back(static_cast<catalog::KernelId>(kernel_by_name(name)));
  const auto threads = static_cast<unsigned>(args.get_uint("-j", 0, 0, 1024));
  const int arch = target_arch(args);
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto progress = [&](std::size_t done, std::size_t total, std::string_view name) {
    if (tty) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(kWidth * done / total);
      std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu %-40.*s", filled, "##############################",
                   kWidth - filled, "", done, total, static_cast<int>(name.size()), name.data());
      if (done == total) std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "%zu/%zu %.*s\n", done, total, static_cast<int>(name.size()), name.data());
    }
  };
  const jit::WarmReport report = warm(arch, ids, threads, progress);
  if (!report.errors.empty() && report.unavailable == report.errors.size()) {
    // Every kernel failed for one reason: NVRTC is missing. Say it once.
    std::fprintf(stderr, "%s\n", report.errors.front().c_str());
    return kExitUnavailable;
  }
  for (const auto& e : report.errors) std::fprintf(stderr, "%s\n", e.c_str());

  // What warm is for is the entries it leaves on disk: count the ones missing.
  std::size_t stored = 0;
  if (ids.empty()) {
    for (const auto& k : catalog::kInfo) stored += entry_exists(static_cast<std::uint32_t>(k.id), arch);
  } else {
    for (const auto id : ids) stored += entry_exists(static_cast<std::uint32_t>(id), arch);
  }
  const std::size_t wanted = report.kernels - report.errors.size();
  // With a signing key, what was already cached is published too (what was compiled already is).
  std::vector<std::uint32_t> all;
  if (report.ready != 0) {
    if (ids.empty()) {
      for (const auto& k : catalog::kInfo) all.push_back(static_cast<std::uint32_t>(k.id));
    } else {
      for (const auto id : ids) all.push_back(static_cast<std::uint32_t>(id));
    }
    publish_cached(all, arch);
  }
  const std::size_t not_stored = wanted > stored ? wanted - stored : 0;
  print(format(
      "warm sm_%d: %zu kernels, %zu compiled, %zu already cached, %zu failed, %zu not stored, %u threads, "
      "%.2f s\n",
      arch, report.kernels, report.compiled, report.ready, report.errors.size(), not_stored, report.threads,
      report.seconds));
  if (remote_json() != "null") print(remote_text());
  if (not_stored != 0) {
    std::fflush(stdout);  // the summary first, on a terminal
    const jit::CacheInfo i = info();
    const std::string why = cache_disabled_by_env() ? "the cache is disabled (TROPICAL_CACHE_DISABLE)"
                            : !i.enabled            ? "the cache is unusable (its reason is printed above)"
                            : registry().disk().process_stats().errors > 0
                                ? "storing failed (the reason is printed above)"
                                : "the cache is too small (limit " + std::to_string(i.max_bytes) +
                                      " bytes; see TROPICAL_CACHE_MAX_SIZE or tropical config max_size)";
    std::fprintf(stderr, "tropical: %zu of %zu kernels for sm_%d are not stored in %s: %s\n", not_stored,
                 wanted, arch, i.dir.c_str(), why.c_str());
  }
  return report.errors.empty() && not_stored == 0 ? kExitOk : kExitFailed;
}

int cmd_stats(int argc, char** argv) {
  const Args args("stats", argc, argv, {}, {"--json", "--zero"});
  if (args.help()) {
    print(
        "usage: tropical stats [--json | --zero]\n\n"
        "Prints the disk cache's location, size and machine-wide counters, every tier\n"
        "(primary, read-only layers: path, trusted or refused and why, entries, bytes,\n"
        "hits), and per\n"
        "kernel the architectures it is cached for. --json: one object, fields in the\n"
        "README. --zero: sets the machine-wide counters to zero (entries stay).\n");
    return kExitOk;
  }
  if (args.has("--json") && args.has("--zero")) throw UsageError{"stats takes --json or --zero, not both"};
  const jit::CacheInfo i = info();
  if (args.has("--zero")) {
    registry().disk().zero_stats();
    print("statistics zeroed in " + i.dir.string() +
          (i.enabled ? "\n" : " (the cache is disabled: there were none)\n"));
    return kExitOk;
  }
  const jit::CacheStats s = stats().machine;
  const std::vector<int> archs = probe_archs();
  std::string text =
      format("cache %s (%s)\n  %" PRIu64 " entries, %" PRIu64 " bytes of %" PRIu64 " allowed\n",
             i.dir.c_str(), i.enabled ? "enabled" : "disabled", i.entries, i.bytes, i.max_bytes);
  text += format("machine-wide:\n  hits %" PRIu64 ", misses %" PRIu64 ", compiles %" PRIu64
                 ", evictions %" PRIu64 ", errors %" PRIu64 "\n  bytes written %" PRIu64
                 ", bytes read %" PRIu64 ", compile time %.1f ms, load time %.3f ms\n",
                 s.hits, s.misses, s.compiles, s.evictions, s.errors, s.bytes_written, s.bytes_read,
                 static_cast<double>(s.compile_ns) * 1e-6, static_cast<double>(s.load_ns) * 1e-6);
  text += tiers_report(false);
  text += "per kernel (cached architectures, entry bytes):\n";
  std::string json =
      "{\"schema\": 1, \"cache\": {\"dir\": " + json_quote(i.dir.string()) +
      ", \"enabled\": " + (i.enabled ? "true" : "false") + ", \"entries\": " + std::to_string(i.entries) +
      ", \"bytes\": " + std::to_string(i.bytes) + ", \"max_bytes\": " + std::to_string(i.max_bytes) +
      "}, \"machine\": " + stats_json(s) + ", \"tiers\": " + tiers_report(true) + ", \"kernels\": [";
  std::size_t listed = 0;
  for (const auto& k : catalog::kInfo) {
    std::string line;
    std::string entries;
    for (const int arch : archs) {
      std::uint64_t size = 0;
      if (!entry_exists(static_cast<std::uint32_t>(k.id), arch, &size)) continue;
      line += format(" sm_%d (%" PRIu64 ")", arch, size);
      entries += format("%s{\"arch\": %d, \"bytes\": %" PRIu64 "}", entries.empty() ? "" : ", ", arch, size);
    }
    if (line.empty()) continue;
    text += format("  %-36.*s%s\n", static_cast<int>(k.name.size()), k.name.data(), line.c_str());
    json += std::string(listed == 0 ? "" : ", ") + "{\"name\": " + json_quote(k.name) + ", \"entries\": [" +
            entries + "]}";
    ++listed;
  }
  if (listed == 0) text += "  none cached\n";
  text += remote_text();
  json += "], \"remote\": " + remote_json() + "}\n";
  print(args.has("--json") ? json : text);
  return kExitOk;
}

int cmd_clear(int argc, char** argv) {
  const Args args("clear", argc, argv, {}, {}, kMaxNames);
  if (args.help()) {
    print(
        "usage: tropical clear [NAME...]\n\n"
        "Without names, removes every entry of the disk cache. With names, removes only\n"
        "those kernels' entries (tuned and quick), for every architecture (of this NVRTC build). An\n"
        "unknown name removes nothing (exit 2). Statistics stay (see stats --zero).\n");
    return kExitOk;
  }
  // Every name is checked before anything is removed.
  std::vector<std::uint32_t> ids;
  for (const auto& name : args.words()) ids.push_back(kernel_by_name(name));
  const jit::CacheInfo i = info();
  if (cache_disabled_by_env()) {
    print("the disk cache is disabled (TROPICAL_CACHE_DISABLE); nothing removed from " + i.dir.string() +
          "\n");
    return kExitOk;
  }
  if (ids.empty()) {
    print(format("removed %" PRIu64 " entries from %s\n", clear(), i.dir.c_str()));
    return kExitOk;
  }
  auto& reg = registry();
  const std::vector<int> archs = probe_archs();
  std::size_t removed = 0;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (const auto id : ids) {
    for (const int arch : archs) {
      // The kernel's quick fragment too, where it has one.
      for (const jit::Tier tier : {jit::Tier::kTuned, jit::Tier::kQuick}) {
        if (reg.has_tier(id, tier)) removed += reg.disk().remove(reg.cache_key(id, arch, tier));
      }
    }
  }
  print(format("removed %zu entries of %zu kernels from %s\n", removed, ids.size(), i.dir.c_str()));
  return kExitOk;
}

int cmd_compile(int argc, char** argv) {
  const Args args("compile", argc, argv, {"--arch"}, {}, kMaxNames);
  if (args.help()) {
    print(
        "usage: tropical compile [--arch sm_XY] NAME\n\n"
        "NVRTC-compiles one kernel of the catalog for the arch (default: GPU 0's, else\n"
        "sm_90), bypassing every cache, and prints the time and image sizes.\n");
    return kExitOk;
  }
  if (args.words().size() != 1) throw UsageError{"compile wants one kernel name"};
  const auto id = kernel_by_name(args.words()[0]);
  const int arch = target_arch(args);
  const auto start = std::chrono::steady_clock::now();
  const jit::CompiledImage image = jit::compile(catalog::kKernels[id], arch);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  print(format("compiled %s for sm_%d in %.1f ms: CUBIN %zu bytes, PTX %zu bytes (NVRTC %s)\n",
               args.words()[0].c_str(), arch, ms, image.cubin.size(), image.ptx.size(),
               jit::nvrtc_version().c_str()));
  return kExitOk;
}

}  // namespace tropical::cli
