#pragma once

#include <string>
#include <string_view>

// What the storage tells a person: warnings (each cause at most once per
// process) and the decision log that TROPICAL_LOG turns on.

namespace tropical::storage {

/// How much the decision log writes to stderr: nothing, one line per lookup decision, or also memory hits
/// and lock waits.
enum class LogLevel { kOff, kInfo, kDebug };

/// The level TROPICAL_LOG names ("info", "debug"; anything else, or unset, is kOff). Never throws.
LogLevel log_level_from_env() noexcept;

/// Writes "tropical: <level>: <text>\n" to stderr in one write if the configured level asks for lines of this
/// level (kInfo lines at kInfo and kDebug, kDebug lines at kDebug). Thread-safe.
void log_line(LogLevel configured, LogLevel level, std::string_view text);

/// The kinds of problem a warning reports; each is reported once per subject per process.
enum class Problem {
  kUnusable,        ///< the cache directory cannot be used at all
  kReadOnly,        ///< entries can be read but not stored
  kStoreFailed,     ///< one store failed for a passing reason (a full disk, a file size limit)
  kNoMachineStats,  ///< the statistics file is missing, foreign or changed
  kBadSetting,      ///< an environment variable's value is malformed
  kBadLockFile,     ///< one lock stripe's file is unusable: that stripe compiles without storing
  kLockTimeout,     ///< a lock holder did not finish within the bound
  kLayerRefused,    ///< a read-only layer is missing, untrusted or unreadable
  kFallback,        ///< the primary directory cannot store: another one (or memory) is used
};

/// Writes line (a whole line, newline included) to stderr unless (problem, subject) was reported before in
/// this process: a problem keeps quiet after its first warning but never hides a different one. Thread-safe.
void warn_once(Problem problem, const std::string& subject, const std::string& line);

/// Whether c is a control character (below 0x20, or DEL).
bool is_control(char c) noexcept;

/// text with every control character replaced by '?', for quoting a value a user set.
std::string printable(std::string_view text);

/// text with every control character but the line break and the tab shown as '?': what the library's
/// warning and log sinks write to stderr, so that no escape sequence, bell or carriage return in a value
/// from outside (a path, a URL, a server's reply) reaches the terminal, however a line was built.
std::string terminal_safe(std::string_view text);

}  // namespace tropical::storage
