// Output helpers of the `tropical` command: printf-style text, JSON text and checked writes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tropical::cli {

/// printf(fmt, args...) as a string.
std::string format(const char* fmt, auto... args) {
  const int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string out(static_cast<std::size_t>(std::max(n, 0)), '\0');
  std::snprintf(out.data(), out.size() + 1, fmt, args...);
  return out;
}

/// n and its noun: "1 kernel", "2 kernels" (`many` for an irregular plural: count(n, "entry", "entries")).
std::string count(std::uint64_t n, std::string_view one, std::string_view many = {});

/// s as a JSON string literal (quotes, backslashes and control characters escaped).
std::string json_quote(std::string_view s);

/// Writes text to stdout, control characters but line breaks and tabs shown as '?' (a path or name from
/// outside never drives the terminal; JSON escapes its own); write errors are seen by finish_stdout().
void print(std::string_view text);

/// Flushes stdout; false (with errno set) if any write to it failed.
bool finish_stdout();

}  // namespace tropical::cli
