#include "tropical/jit/zero_pages.hpp"

#include <sys/mman.h>

#include <new>

namespace tropical::jit {

// Not calloc: glibc clears a heap block with memset, touching every page at once,
// and only blocks over its (moving) mmap threshold come untouched from the kernel.
void* map_zero_pages(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void unmap_zero_pages(void* p, std::size_t bytes) noexcept {
  if (p != nullptr && bytes != 0) ::munmap(p, bytes);
}

}  // namespace tropical::jit
