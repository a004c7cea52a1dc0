// The warning and log sinks (src/jit/storage/log.cpp): one warning per (problem, subject), and nothing a
// terminal would act on reaches stderr, however the line was built.
#include "tropical/storage/log.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tropical::storage {
namespace {

bool has_control_but_newline_or_tab(const std::string& text) {
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f) return true;
  }
  return false;
}

TEST(Log, printable_and_terminal_safe_show_control_characters_as_question_marks) {
  EXPECT_EQ(printable("a\x1b[2Jb\n\t\x7f"), "a?[2Jb???");
  EXPECT_EQ(terminal_safe("a\x1b]0;t\x07 b\r\n\tc\n"), "a?]0;t? b?\n\tc\n");
}

TEST(Log, a_warning_line_with_escape_sequences_reaches_stderr_without_them_and_once) {
  ::testing::internal::CaptureStderr();
  const std::string line = "tropical: warning: /tmp/\x1b[2Jcache\x07: cannot be used\r\n";
  warn_once(Problem::kUnusable, "log_test subject", line);
  warn_once(Problem::kUnusable, "log_test subject", line);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "tropical: warning: /tmp/?[2Jcache?: cannot be used?\n");
  EXPECT_FALSE(has_control_but_newline_or_tab(err)) << err;
}

TEST(Log, a_log_line_with_escape_sequences_reaches_stderr_without_them) {
  ::testing::internal::CaptureStderr();
  log_line(LogLevel::kDebug, LogLevel::kInfo, "compiled \x1b[31mred\x1b[0m");
  log_line(LogLevel::kOff, LogLevel::kInfo, "not shown");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "tropical: info: compiled ?[31mred?[0m\n");
}

}  // namespace
}  // namespace tropical::storage
