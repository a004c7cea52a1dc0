#include "output.hpp"

#include <cerrno>
#include <cstdio>

#include "tropical/storage/log.hpp"

namespace tropical::cli {

std::string count(std::uint64_t n, std::string_view one, std::string_view many) {
  std::string text = std::to_string(n) + " ";
  if (n == 1) return text.append(one);
  return many.empty() ? text.append(one).append("s") : text.append(many);
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x",
                        static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void print(std::string_view text) {
  const std::string shown = storage::terminal_safe(text);
  std::fwrite(shown.data(), 1, shown.size(), stdout);
}

bool finish_stdout() {
  // ferror catches a failure of an earlier, buffered write; fflush one of the last.
  const bool flushed = std::fflush(stdout) == 0;
  if (std::ferror(stdout) != 0) {
    if (errno == 0) errno = EIO;
    return false;
  }
  return flushed;
}

}  // namespace tropical::cli
