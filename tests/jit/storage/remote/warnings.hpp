#pragma once

// Collects the warning lines of a client or store, thread-safely, for counting.

#include <mutex>
#include <string>
#include <vector>

#include "tropical/storage/remote/redis_client.hpp"

namespace tropical::storage::remote::testing {

class Warnings {
 public:
  /// A sink that appends to this collection (which must outlive it).
  WarningSink sink() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex_);
      lines_.push_back(line);
    };
  }
  /// The lines so far.
  std::vector<std::string> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }
  /// How many lines so far.
  std::size_t count() const { return lines().size(); }
  /// All lines joined, for failure messages.
  std::string text() const {
    std::string all;
    for (const auto& l : lines()) all += l;
    return all;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

}  // namespace tropical::storage::remote::testing
