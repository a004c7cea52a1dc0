// Command-line parsing for the `tropical` command: flags, words, numbers, archs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tropical::cli {

/// Exit codes of every subcommand, as the README documents them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnavailable = 3;

/// Bad usage: main prints the message on one line and exits kExitUsage.
struct UsageError {
  std::string message;
};

/// The flags and words of one subcommand, checked against what it accepts:
/// value_flags take a value (`--arch sm_90`, `--arch=sm_90`, `-j4`, `-j=4`), bool_flags
/// none, and at most max_words positional words (kernel names; a negative number
/// such as `-5` is a word, not an option). An unknown option, a missing value, a
/// value given to a flag that takes none, a repeated flag or a word too many
/// throws UsageError. `--` ends the options.
class Args {
 public:
  /// Parses argv[0..argc) for `tropical <command>`; with -h/--help anywhere the
  /// word count is not checked. Throws UsageError.
  Args(const std::string& command, int argc, char** argv, const std::vector<std::string>& value_flags,
       const std::vector<std::string>& bool_flags, std::size_t max_words = 0);

  /// True if -h or --help was given.
  bool help() const { return help_; }
  /// True if the flag was given.
  bool has(const std::string& flag) const { return values_.count(flag) != 0; }
  /// The flag's value, or fallback when it was not given.
  std::string get(const std::string& flag, const std::string& fallback = "") const;
  /// The flag's value as a decimal integer in [min, max] (digits only: no sign,
  /// space or suffix), or fallback when it was not given. Throws UsageError.
  std::uint64_t get_uint(const std::string& flag, std::uint64_t fallback, std::uint64_t min,
                         std::uint64_t max) const;
  /// The positional words, in order.
  const std::vector<std::string>& words() const { return words_; }

 private:
  bool help_ = false;
  std::map<std::string, std::string> values_;
  std::vector<std::string> words_;
};

/// "sm_90" or "90" -> 90; anything else (or outside sm_10..sm_999) throws UsageError.
int parse_arch(const std::string& text);

/// "sm_75, sm_80, ..." for messages.
std::string arch_list(const std::vector<int>& archs);

}  // namespace tropical::cli
