#include "tropical/storage/log.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <utility>

namespace tropical::storage {

LogLevel log_level_from_env() noexcept {
  const char* value = std::getenv("TROPICAL_LOG");
  if (value == nullptr) return LogLevel::kOff;
  const std::string_view text(value);
  if (text == "debug") return LogLevel::kDebug;
  if (text == "info") return LogLevel::kInfo;
  return LogLevel::kOff;
}

void log_line(LogLevel configured, LogLevel level, std::string_view text) {
  if (level == LogLevel::kOff || static_cast<int>(configured) < static_cast<int>(level)) return;
  std::string line = level == LogLevel::kDebug ? "tropical: debug: " : "tropical: info: ";
  line += terminal_safe(text);
  line += '\n';
  // One write per line, so lines of concurrent threads and processes do not interleave.
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void warn_once(Problem problem, const std::string& subject, const std::string& line) {
  static std::mutex mutex;
  // Never destroyed: a warning may come from a thread still running during exit.
  static auto& warned = *new std::set<std::pair<Problem, std::string>>;
  {
    std::lock_guard lock(mutex);
    if (!warned.emplace(problem, subject).second) return;
  }
  std::fputs(terminal_safe(line).c_str(), stderr);
}

bool is_control(char c) noexcept { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

namespace {

// text with every control character for which keep(c) is false shown as '?'.
template <class Keep>
std::string replace_controls(std::string_view text, Keep keep) {
  std::string shown(text);
  for (char& c : shown) {
    if (is_control(c) && !keep(c)) c = '?';
  }
  return shown;
}

}  // namespace

std::string printable(std::string_view text) {
  return replace_controls(text, [](char) { return false; });
}

std::string terminal_safe(std::string_view text) {
  return replace_controls(text, [](char c) { return c == '\n' || c == '\t'; });
}

}  // namespace tropical::storage
