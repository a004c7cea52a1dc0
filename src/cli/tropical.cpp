// The `tropical` command: list, warm, stats, clear, compile, gemm, verify, keygen.
//
// Exit codes: 0 success; 1 a check, compile, store or write to stdout failed;
// 2 bad usage (nothing was changed); 3 a GPU, driver or NVRTC the command needs is missing.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "output.hpp"
#include "tropical/error.hpp"

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
    "  compile   NVRTC-compile one kernel, bypassing the cache, and time it\n"
    "  gemm      run one product on GPU 0, check it, print cold/warm/hot timings\n"
    "  verify    run every kernel on GPU 0 against the CPU reference\n"
    "  keygen    write an ed25519 key pair for the fleet (Redis) cache\n"
    "\n"
    "'tropical <command> --help' describes each; options take '--opt value' or\n"
    "'--opt=value'. Exit codes: 0 ok, 1 a check, compile, store or write failed,\n"
    "2 bad usage (nothing changed), 3 no GPU/driver/NVRTC for a command that needs one.\n";

int run(int argc, char** argv) {
  using Command = int (*)(int, char**);
  const std::map<std::string_view, Command> commands = {
      {"list", cmd_list},       {"warm", cmd_warm}, {"stats", cmd_stats},   {"clear", cmd_clear},
      {"compile", cmd_compile}, {"gemm", cmd_gemm}, {"verify", cmd_verify}, {"keygen", cmd_keygen},
  };
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return kExitUsage;
  }
  const std::string_view first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    print(kUsage);
    return kExitOk;
  }
  if (first == "--version") {
    if (argc > 2) throw UsageError{"--version takes no arguments"};
    print("tropical " TROPICAL_TOOL_VERSION "\n");
    return kExitOk;
  }
  const auto command = commands.find(first);
  if (command == commands.end()) {
    throw UsageError{"unknown command '" + std::string(first) + "' (see 'tropical --help')"};
  }
  return command->second(argc - 2, argv + 2);
}

}  // namespace

int main(int argc, char** argv) {
  int code = kExitFailed;
  try {
    code = run(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "tropical: %s\n", e.message.c_str());
    code = kExitUsage;
  } catch (const tropical::Unavailable& e) {
    std::fprintf(stderr, "%s\n", e.what());
    code = kExitUnavailable;
  } catch (const tropical::InvalidArgument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    code = kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    code = kExitFailed;
  }
  if (!finish_stdout()) {
    std::fprintf(stderr, "tropical: cannot write to standard output: %s\n", std::strerror(errno));
    if (code == kExitOk) code = kExitFailed;
  }
  return code;
}
