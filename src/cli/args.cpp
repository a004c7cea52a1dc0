#include "args.hpp"

#include <algorithm>
#include <charconv>

namespace tropical::cli {

namespace {

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// A short flag ("-j") may carry its value glued on ("-j4"), as getopt allows, or after '=' ("-j=4"), as
// the long ones do.
bool is_glued_short(const std::string& flag, const std::string& arg) {
  return flag.size() == 2 && flag[0] == '-' && flag[1] != '-' && arg.size() > 2 &&
         arg.compare(0, 2, flag) == 0;
}

// "-5" is a value (a bad one, for every setting this command has), not an option: no flag starts with a digit.
bool is_negative_number(const std::string& arg) {
  return arg.size() > 1 && arg[0] == '-' && arg[1] >= '0' && arg[1] <= '9';
}

}  // namespace

Args::Args(const std::string& command, int argc, char** argv, const std::vector<std::string>& value_flags,
           const std::vector<std::string>& bool_flags, std::size_t max_words) {
  bool options_done = false;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (options_done || arg == "-" || arg.empty() || arg[0] != '-' || is_negative_number(arg)) {
      words_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
    } else if (arg == "-h" || arg == "--help") {
      help_ = true;
    } else {
      std::string flag = arg;
      std::string value;
      bool has_value = false;
      if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
        flag = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        has_value = true;
      } else {
        for (const auto& f : value_flags) {
          if (is_glued_short(f, arg)) {
            flag = f;
            value = arg.substr(arg[2] == '=' ? 3 : 2);
            has_value = true;
          }
        }
      }
      if (contains(bool_flags, flag)) {
        if (has_value) throw UsageError{flag + " takes no value"};
        value.assign(1, '1');  // not = "1": GCC 12 -O3 reports a false -Wrestrict there
      } else if (contains(value_flags, flag)) {
        if (!has_value) {
          if (i + 1 >= argc) throw UsageError{flag + " needs a value"};
          value = argv[++i];
        }
      } else {
        std::string message = "unknown option ";
        message.append(flag).append(" (see 'tropical ").append(command).append(" --help')");
        throw UsageError{message};
      }
      if (!values_.emplace(flag, value).second) throw UsageError{flag + " is given twice"};
    }
  }
  if (help_) return;
  if (words_.size() > max_words) {
    std::string message = "unexpected argument '";
    message.append(words_[max_words]).append("' (see 'tropical ").append(command).append(" --help')");
    throw UsageError{message};
  }
}

std::string Args::get(const std::string& flag, const std::string& fallback) const {
  const auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

std::uint64_t Args::get_uint(const std::string& flag, std::uint64_t fallback, std::uint64_t min,
                             std::uint64_t max) const {
  if (!has(flag)) return fallback;
  const std::string text = get(flag);
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || ptr != end || value < min || value > max) {
    const std::string range = min == 0 ? "a non-negative integer up to " + std::to_string(max)
                                       : "an integer from " + std::to_string(min) + " to " + std::to_string(max);
    throw UsageError{flag + " wants " + range + ", not '" + text + "'"};
  }
  return value;
}

int parse_arch(const std::string& text) {
  const std::string digits = text.starts_with("sm_") ? text.substr(3) : text;
  int value = 0;
  const char* end = digits.data() + digits.size();
  const auto [ptr, error] = std::from_chars(digits.data(), end, value);
  // The digits as NVRTC spells them: no sign, no leading zero (sm_090 is not an arch name).
  if (digits.empty() || digits.front() == '0' || error != std::errc() || ptr != end || value < 10 || value > 999) {
    throw UsageError{"bad architecture '" + text + "' (want e.g. sm_90)"};
  }
  return value;
}

std::string arch_list(const std::vector<int>& archs) {
  std::string out;
  for (const int arch : archs) out += (out.empty() ? "sm_" : ", sm_") + std::to_string(arch);
  return out;
}

}  // namespace tropical::cli
