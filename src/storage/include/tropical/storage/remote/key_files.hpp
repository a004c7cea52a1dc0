#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace tropical::storage::remote {

/// The file names write_key_pair uses inside its directory.
inline constexpr const char* kPrivateKeyFile = "tropical-remote-signing.pem";
inline constexpr const char* kPublicKeyFile = "tropical-remote-signing.pub.pem";

/// Where write_key_pair put the two files.
struct KeyPairFiles {
  std::filesystem::path private_key;  ///< PEM PKCS#8 private key, mode 0600: TROPICAL_REMOTE_SIGNING_KEY
  std::filesystem::path public_key;   ///< PEM public key, mode 0644: an item of TROPICAL_REMOTE_TRUSTED_KEYS
};

/// Generates an ed25519 key pair and writes it into dir (created 0700 if missing): each file
/// is created with O_EXCL (a file already there is never overwritten: that is an error) and
/// fsynced. On any failure the files this call created are removed and nullopt is returned
/// with *error set. Never throws.
std::optional<KeyPairFiles> write_key_pair(const std::filesystem::path& dir, std::string* error);

}  // namespace tropical::storage::remote
