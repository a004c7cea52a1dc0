#pragma once

#include <atomic>
#include <cstddef>

namespace tropical::jit {

/// Maps `bytes` of anonymous zero pages (mmap; a LeakSanitizer root region when LSan runs), which the
/// kernel backs only on first touch; throws std::bad_alloc if it cannot. Freed by unmap_zero_pages(p, bytes).
void* map_zero_pages(std::size_t bytes);

/// Unmaps what map_zero_pages(bytes) returned; nullptr is ignored.
void unmap_zero_pages(void* p, std::size_t bytes) noexcept;

/// A fixed array of `size` null pointers of type T*, read and written atomically, in zero pages: an array
/// sized for every (kernel, device) costs a new process only the pages of the entries it uses (a zeroed
/// heap array of them cost ~10,000 slot constructions, 1.3 MB, at every start). Not copyable.
template <class T>
class AtomicPointers {
 public:
  /// size null pointers; throws std::bad_alloc.
  explicit AtomicPointers(std::size_t size)
      : size_(size), data_(static_cast<T**>(map_zero_pages(size * sizeof(T*)))) {}
  ~AtomicPointers() { unmap_zero_pages(data_, size_ * sizeof(T*)); }
  AtomicPointers(const AtomicPointers&) = delete;
  AtomicPointers& operator=(const AtomicPointers&) = delete;

  /// Entry i (i < size), for atomic loads, stores and compare-exchanges.
  std::atomic_ref<T*> operator[](std::size_t i) const noexcept { return std::atomic_ref<T*>(data_[i]); }

  /// The number of entries.
  std::size_t size() const noexcept { return size_; }

 private:
  static_assert(std::atomic_ref<T*>::required_alignment <= alignof(T*));
  std::size_t size_;
  T** data_;  // zero-filled pages hold null pointers on every ABI this library builds for
};

}  // namespace tropical::jit
