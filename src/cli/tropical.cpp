// The `tropical` command: list, warm, stats, clear, config, compile, gemm, verify, keygen.
//
// Exit codes: 0 success; 1 a check, compile, store or write to stdout failed;
// 2 bad usage (nothing was changed); 3 a GPU, driver or NVRTC the command needs is missing.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "output.hpp"
#include "tropical/error.hpp"
#include "tropical/storage/log.hpp"

namespace {

using namespace tropical::cli;

const char* const kUsage =
    "usage: tropical <command> [options]\n"
    "       tropical --version\n"
    "\n"
    "commands:\n"
    "  list      the kernel catalog, and which kernels are cached for an arch\n"
    "  warm      compile kernels into the disk cache (no GPU needed, all cores)\n"
    "  stats     disk cache statistics, machine-wide (--json, --zero)\n"
    "  clear     remove every entry of the disk cache, or those of named kernels\n"
    "  config    show or set the cache's settings (<cache dir>/tropical.conf)\n"
    "  compile   NVRTC-compile one kernel, bypassing the cache, and time it\n"
    "  gemm      run one product on GPU 0 (or the CPU), check it, print cold/warm/hot timings\n"
    "  verify    run every kernel on GPU 0 against the CPU reference\n"
    "  keygen    write an ed25519 key pair for the fleet (Redis) cache\n"
    "\n"
    "Every command takes --cache-dir DIR, before or after its name: the primary cache directory\n"
    "(overrides TROPICAL_CACHE_DIR). 'tropical <command> --help' describes each; options take\n"
    "'--opt value' or '--opt=value' (short ones also '-j4' and '-j=4'). Exit codes: 0 ok, 1 a check,\n"
    "compile, store or write failed, 2 bad usage (nothing changed), 3 no GPU/driver/NVRTC for a\n"
    "command that needs one.\n";

// Levenshtein distance, for "did you mean": a mistyped command is one or two edits from the right one.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

int run(int argc, char** argv) {
  using Command = int (*)(int, char**);
  const std::map<std::string_view, Command> commands = {
      {"list", cmd_list},     {"warm", cmd_warm},       {"stats", cmd_stats}, {"clear", cmd_clear},
      {"config", cmd_config}, {"compile", cmd_compile}, {"gemm", cmd_gemm},   {"verify", cmd_verify},
      {"keygen", cmd_keygen},
  };
  // --cache-dir applies to every command: taken out wherever it stands, before the command name (as git's
  // -C) or after it, before the command parses its own flags; the registry reads TROPICAL_CACHE_DIR when it
  // is first used, after this.
  std::string cache_dir;
  bool seen = false;
  const auto take_cache_dir = [&](int& i) {
    const std::string_view arg = argv[i];
    if (arg != "--cache-dir" && !arg.starts_with("--cache-dir=")) return false;
    if (seen) throw UsageError{"--cache-dir is given twice"};
    seen = true;
    if (arg == "--cache-dir") {
      if (i + 1 >= argc) throw UsageError{"--cache-dir needs a value"};
      cache_dir = argv[++i];
    } else {
      cache_dir = std::string(arg.substr(std::string_view("--cache-dir=").size()));
    }
    if (cache_dir.empty()) throw UsageError{"--cache-dir needs a directory"};
    return true;
  };
  int at = 1;
  while (at < argc && take_cache_dir(at)) ++at;
  if (at >= argc) {
    std::fputs(kUsage, stderr);
    return kExitUsage;
  }
  const std::string_view first = argv[at];
  if (first == "--help" || first == "-h" || first == "help") {
    print(kUsage);
    return kExitOk;
  }
  if (first == "--version") {
    if (argc > at + 1) throw UsageError{"--version takes no arguments"};
    print("tropical " TROPICAL_TOOL_VERSION "\n");
    return kExitOk;
  }
  const auto command = commands.find(first);
  if (command == commands.end()) {
    std::string_view nearest;
    std::size_t best = 3;  // more than two edits away is no suggestion
    for (const auto& entry : commands) {
      const std::size_t d = edit_distance(first, entry.first);
      if (d < best) {
        best = d;
        nearest = entry.first;
      }
    }
    const std::string hint = nearest.empty() ? "" : "did you mean '" + std::string(nearest) + "'? ";
    throw UsageError{"unknown command '" + std::string(first) + "' (" + hint + "see 'tropical --help')"};
  }
  std::vector<char*> rest;
  for (int i = at + 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      rest.insert(rest.end(), argv + i, argv + argc);
      break;
    }
    if (!take_cache_dir(i)) rest.push_back(argv[i]);
  }
  if (seen) {
    std::error_code ignored;
    const std::filesystem::path absolute = std::filesystem::absolute(cache_dir, ignored);
    ::setenv("TROPICAL_CACHE_DIR", (absolute.empty() ? cache_dir : absolute.string()).c_str(), 1);
  }
  rest.push_back(nullptr);
  return command->second(static_cast<int>(rest.size() - 1), rest.data());
}

}  // namespace

int main(int argc, char** argv) {
  int code = kExitFailed;
  try {
    code = run(argc, argv);
  } catch (const UsageError& e) {
    // Messages echo what the command line gave: control characters (ESC, BEL) are not sent to the terminal.
    std::fprintf(stderr, "tropical: %s\n", tropical::storage::terminal_safe(e.message).c_str());
    code = kExitUsage;
  } catch (const tropical::Unavailable& e) {
    std::fprintf(stderr, "%s\n", tropical::storage::terminal_safe(e.what()).c_str());
    code = kExitUnavailable;
  } catch (const tropical::InvalidArgument& e) {
    std::fprintf(stderr, "%s\n", tropical::storage::terminal_safe(e.what()).c_str());
    code = kExitUsage;
  } catch (const std::bad_alloc&) {
    std::fputs("tropical: out of host memory\n", stderr);
    code = kExitFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", tropical::storage::terminal_safe(e.what()).c_str());
    code = kExitFailed;
  }
  if (!finish_stdout()) {
    std::fprintf(stderr, "tropical: cannot write to standard output: %s\n", std::strerror(errno));
    if (code == kExitOk) code = kExitFailed;
  }
  return code;
}
