#include "tropical/jit/zero_pages.hpp"

#include <sys/mman.h>

#include <new>

// LeakSanitizer's interface, weak: present only in a process that runs LSan
// (ASan or LSan, in the program or in this library), null otherwise.
extern "C" void __lsan_register_root_region(const void* p, std::size_t size) __attribute__((weak));
extern "C" void __lsan_unregister_root_region(const void* p, std::size_t size) __attribute__((weak));

namespace tropical::jit {

// Not calloc: glibc clears a heap block with memset, touching every page at once,
// and only blocks over its (moving) mmap threshold come untouched from the kernel.
// LeakSanitizer does not scan mappings it did not make, so the pages are
// registered with it as a root region: objects only they point to (the
// registry's slots) stay reachable, and a program under LSan sees no leak.
void* map_zero_pages(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  if (__lsan_register_root_region != nullptr) __lsan_register_root_region(p, bytes);
  return p;
}

void unmap_zero_pages(void* p, std::size_t bytes) noexcept {
  if (p == nullptr || bytes == 0) return;
  if (__lsan_unregister_root_region != nullptr) __lsan_unregister_root_region(p, bytes);
  ::munmap(p, bytes);
}

}  // namespace tropical::jit
