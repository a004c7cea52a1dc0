#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace tropical::test {

/// A fresh directory under the system temp dir named tropical-<what>-XXXXXX, removed with its contents.
class TempDir {
 public:
  explicit TempDir(const std::string& what) {
    std::string pattern = (std::filesystem::temp_directory_path() / ("tropical-" + what + "-XXXXXX")).string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace tropical::test
