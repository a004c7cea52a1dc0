// The subcommands that need no GPU: warm, stats, clear, compile (list: list_command.cpp).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cache_entries.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "tropical/catalog_sources.hpp"
#include "tropical/jit/driver.hpp"
#include "tropical/storage/log.hpp"
#include "tropical/internal/registry.hpp"
#include "tropical/tropical.hpp"

namespace tropical::cli {

namespace {

/// Kernel names one command line may list (a name may repeat).
constexpr std::size_t kMaxNames = 4096;

/// Whether the entry of kernel id for arch is on disk, by name alone: nothing
/// is read, and no statistics or LRU time is touched.
bool entry_exists(std::uint32_t id, int arch) {
  auto& reg = registry();
  std::error_code ec;
  return std::filesystem::is_regular_file(reg.disk().entry_path(reg.cache_key(id, arch)), ec);
}

bool cache_disabled_by_env() {
  const char* v = std::getenv("TROPICAL_CACHE_DISABLE");
  return v != nullptr && !info().enabled;
}

std::string stats_json(const CacheStats& s) {
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

int cmd_warm(int argc, char** argv) {
  const Args args("warm", argc, argv, {"--arch", "-j"}, {"--all"}, kMaxNames);
  if (args.help()) {
    print(
        "usage: tropical warm [--arch sm_XY] [-j THREADS] (--all | NAME...)\n\n"
        "Compiles kernels into the disk cache for the arch (default: GPU 0's, else sm_90),\n"
        "on every core unless -j says otherwise. Needs no GPU. Progress goes to stderr: a\n"
        "bar on a terminal, one line per kernel otherwise; the summary to stdout. Exit 1\n"
        "if a kernel failed or is not stored (cache disabled, unusable or too small, or\n"
        "its entry removed meanwhile by another process: each said apart).\n"
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
  const WarmReport report = warm(arch, ids, threads, progress);
  if (!report.errors.empty() && report.unavailable == report.errors.size()) {
    // Every kernel failed for one reason: NVRTC is missing. Say it once.
    std::fprintf(stderr, "%s\n", storage::terminal_safe(report.errors.front()).c_str());
    return kExitUnavailable;
  }
  for (const auto& e : report.errors) std::fprintf(stderr, "%s\n", storage::terminal_safe(e).c_str());

  // What warm is for is the entries it leaves on disk: count the ones missing, and those of them that this
  // process's own eviction removed (the cache is too small for them) apart from the rest (removed by
  // someone else since: a tropical clear, another process's eviction). A disabled or unusable cache stored
  // nothing in this run, whatever an earlier run left in its directory.
  std::size_t stored = 0, evicted_here = 0;
  const bool stores = info().enabled;
  const auto look = [&](std::uint32_t id) {
    if (entry_exists(id, arch)) {
      ++stored;
    } else if (registry().disk().evicted(registry().cache_key(id, arch))) {
      ++evicted_here;
    }
  };
  if (stores && ids.empty()) {
    for (const auto& k : catalog::kInfo) look(static_cast<std::uint32_t>(k.id));
  } else if (stores) {
    for (const auto id : ids) look(static_cast<std::uint32_t>(id));
  }
  const std::size_t wanted = report.kernels - report.errors.size();
  // With a signing key, what was already cached is compiled again and that compile published (what this run
  // compiled already is): a producer signs only what it made.
  if (report.ready != 0) publish_cached(arch, ids);
  const std::size_t not_stored = wanted > stored ? wanted - stored : 0;
  print(format("warm sm_%d: %s, %zu compiled, %zu already cached, %zu failed, %zu not stored, %s, %.2f s\n", arch,
               count(report.kernels, "kernel").c_str(), report.compiled, report.ready, report.errors.size(),
               not_stored, count(report.threads, "thread").c_str(), report.seconds));
  if (remote_json() != "null") print(remote_text());
  if (not_stored != 0) {
    std::fflush(stdout);  // the summary first, on a terminal
    const CacheInfo i = info();
    const auto say = [&](std::size_t n, const std::string& why) {
      if (n == 0) return;
      std::fprintf(stderr, "tropical: %zu of %s for sm_%d %s not stored in %s: %s\n", n,
                   count(wanted, "kernel").c_str(), arch, n == 1 ? "is" : "are", storage::terminal_safe(i.dir).c_str(),
                   storage::terminal_safe(why).c_str());
    };
    const std::size_t gone = not_stored - std::min(evicted_here, not_stored);
    // This process's stores evicted these: the limit cannot hold what warm was asked for.
    say(not_stored - gone, "the cache is too small (limit " + std::to_string(i.max_bytes) +
                               " bytes; see TROPICAL_CACHE_MAX_SIZE or tropical config max_size)");
    say(gone, cache_disabled_by_env() ? "the cache is disabled (TROPICAL_CACHE_DISABLE)"
              : !i.enabled            ? "the cache is unusable (its reason is printed above)"
              : registry().disk().process_stats().errors > 0
                  ? "storing failed (the reason is printed above)"
                  // Not evicted by this process: another one (its eviction, `tropical clear`) removed them.
                  : "removed by another process (its eviction or tropical clear) after this run stored or found "
                    "them, not by this run's evictions; the cache holds " + std::to_string(i.bytes) + " of its " +
                        std::to_string(i.max_bytes) + " bytes; run warm again");
  }
  return report.errors.empty() && not_stored == 0 ? kExitOk : kExitFailed;
}

int cmd_stats(int argc, char** argv) {
  const Args args("stats", argc, argv, {}, {"--json", "--zero"});
  if (args.help()) {
    print(
        "usage: tropical stats [--json | --zero]\n\n"
        "Prints the disk cache's location, size (and how many entries this process does\n"
        "not use: another NVRTC build's, format, source), machine-wide counters, every\n"
        "store (primary, read-only layers: path, trusted or refused and why, entries,\n"
        "bytes, hits), and per kernel the architectures it is cached for. --json: one\n"
        "object, fields in the README. --zero: sets the machine-wide counters to zero\n"
        "(entries stay).\n");
    return kExitOk;
  }
  if (args.has("--json") && args.has("--zero")) throw UsageError{"stats takes --json or --zero, not both"};
  const CacheInfo i = info();
  if (args.has("--zero")) {
    registry().disk().zero_stats();
    print("statistics zeroed in " + i.dir +
          (i.enabled ? "\n" : " (the cache is disabled: there were none)\n"));
    return kExitOk;
  }
  const CacheStats s = stats().machine;
  const std::vector<CacheEntry> entries = cache_entries();
  std::size_t unusable = 0;
  for (const auto& e : entries) unusable += !e.usable();
  std::string text =
      format("cache %s (%s)\n  %" PRIu64 " entries, %" PRIu64 " bytes of %" PRIu64 " allowed\n",
             i.dir.c_str(), i.enabled ? "enabled" : "disabled", i.entries, i.bytes, i.max_bytes);
  if (unusable != 0) {
    text += format("  %zu of them not used by this process (see tropical list --entries):\n", unusable) +
            unusable_summary(entries, "    ");
  }
  text += format("machine-wide:\n  hits %" PRIu64 ", misses %" PRIu64 ", compiles %" PRIu64
                 ", evictions %" PRIu64 ", errors %" PRIu64 "\n  bytes written %" PRIu64
                 ", bytes read %" PRIu64 ", compile time %.1f ms, load time %.3f ms\n",
                 s.hits, s.misses, s.compiles, s.evictions, s.errors, s.bytes_written, s.bytes_read,
                 static_cast<double>(s.compile_ns) * 1e-6, static_cast<double>(s.load_ns) * 1e-6);
  text += stores_report(false);
  text += "per kernel (architectures of its tuned entries usable by this process, entry bytes):\n";
  std::string json =
      "{\"schema\": 1, \"cache\": {\"dir\": " + json_quote(i.dir) +
      ", \"enabled\": " + (i.enabled ? "true" : "false") + ", \"entries\": " + std::to_string(i.entries) +
      ", \"bytes\": " + std::to_string(i.bytes) + ", \"max_bytes\": " + std::to_string(i.max_bytes) +
      ", \"unusable\": " + std::to_string(unusable) + "}, \"machine\": " + stats_json(s) +
      ", \"tiers\": " + stores_report(true) + ", \"kernels\": [";
  std::size_t listed = 0;
  for (const auto& k : catalog::kInfo) {
    std::string line;
    std::string json_entries;
    for (const auto& e : entries) {
      if (e.id != static_cast<std::uint32_t>(k.id) || e.tier != jit::Tier::kTuned || !e.usable()) continue;
      line += format(" sm_%d (%" PRIu64 ")", e.arch, e.bytes);
      json_entries += format("%s{\"arch\": %d, \"bytes\": %" PRIu64 "}", json_entries.empty() ? "" : ", ",
                             e.arch, e.bytes);
    }
    if (line.empty()) continue;
    text += format("  %-36.*s%s\n", static_cast<int>(k.name.size()), k.name.data(), line.c_str());
    json += std::string(listed == 0 ? "" : ", ") + "{\"name\": " + json_quote(k.name) + ", \"entries\": [" +
            json_entries + "]}";
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
        "those kernels' entries (tuned and quick) for every architecture, whichever NVRTC\n"
        "build, format or source made them (entries whose header names the kernel; no\n"
        "other file). An unknown name removes nothing (exit 2). Statistics stay (see\n"
        "stats --zero). Only this user's entries are removed.\n");
    return kExitOk;
  }
  // Every name is checked before anything is removed.
  std::vector<std::uint32_t> ids;
  for (const auto& name : args.words()) ids.push_back(kernel_by_name(name));
  const CacheInfo i = info();
  if (cache_disabled_by_env()) {
    print("the disk cache is disabled (TROPICAL_CACHE_DISABLE); nothing removed from " + i.dir +
          "\n");
    return kExitOk;
  }
  if (ids.empty()) {
    print("removed " + count(clear(), "entry", "entries") + " from " + i.dir + "\n");
    return kExitOk;
  }
  // Every entry whose header names one of these kernels (or its quick fragment), for every arch and every
  // NVRTC build, format or source: a file whose header does not say so is left alone.
  auto& reg = registry();
  std::set<std::string, std::less<>> fragments;
  for (const auto id : ids) {
    for (auto& fragment : fragment_names(id)) fragments.insert(std::move(fragment.first));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  const auto removed = static_cast<std::size_t>(
      reg.disk().remove_if([&](const storage::CacheKey& key) { return fragments.count(key.kernel_name) != 0; }));
  print(format("removed %s of %s from %s\n", count(removed, "entry", "entries").c_str(),
               count(ids.size(), "kernel").c_str(), i.dir.c_str()));
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
  const storage::CompiledImage image = jit::compile(catalog::kKernels[id], arch);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  print(format("compiled %s for sm_%d in %.1f ms: CUBIN %zu bytes, PTX %zu bytes (NVRTC %s)\n",
               args.words()[0].c_str(), arch, ms, image.cubin.size(), image.ptx.size(),
               jit::nvrtc_version().c_str()));
  return kExitOk;
}

}  // namespace tropical::cli
