// Output helpers of the `tropical` command: JSON text and checked writes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tropical::cli {

/// s as a JSON string literal (quotes, backslashes and control characters escaped).
std::string json_quote(std::string_view s);

/// Writes text to stdout as it is; write errors are seen by finish_stdout().
void print(std::string_view text);

/// Flushes stdout; false (with errno set) if any write to it failed.
bool finish_stdout();

}  // namespace tropical::cli
