#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

// The one door for files that choose what code runs (key files, tropical.conf): opened without following a
// symbolic link and without blocking, checked on the descriptor (a regular file, owned by this user or root,
// not writable by others, small), then read with a bounded read. Anything else is refused unread, with the
// reason in words, so that the caller can warn once naming the file.

namespace tropical::storage {

/// What a trusted file must look like besides being a regular file owned by this user or root.
struct TrustRule {
  std::uint64_t max_bytes = 64 << 10;  ///< larger: refused unread (a PEM key is a few hundred bytes)
  bool secret = false;                 ///< a private key: no access at all for group or others (as ssh)
  bool group_may_write_own = false;    ///< tropical.conf: group write allowed on this user's own file (the team
                                       ///< directory's rule: its group can replace the file anyway)
};

/// The bytes of a trusted file, or why there are none.
struct TrustedRead {
  std::optional<std::string> bytes;  ///< the whole file when accepted
  bool missing = false;              ///< no such file (ENOENT, ENOTDIR): not a refusal
  std::string reason;                ///< why refused or unreadable ("a FIFO, not a regular file", ...)
};

/// Reads path through the door: open(O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC), fstat the
/// descriptor (a regular file, owner this user or root, not writable by others, nor by the group unless
/// rule.group_may_write_own applies, no group or other access at all if rule.secret, st_size <= max_bytes),
/// then read at most max_bytes + 1 bytes (a file that grew past the cap is refused). Never blocks on a FIFO or
/// device, never reads more than the cap, never throws but bad_alloc; thread-safe.
TrustedRead read_trusted_file(const std::filesystem::path& path, const TrustRule& rule = {});

/// The mode bits of st_mode as four octal digits ("0644"), for reasons and messages.
std::string octal_mode(unsigned mode);

}  // namespace tropical::storage
