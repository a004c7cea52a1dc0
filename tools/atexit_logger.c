// Preloaded into a program (gcc -shared -fPIC -o /tmp/atexit_logger.so tools/atexit_logger.c -ldl;
// LD_PRELOAD=/tmp/atexit_logger.so PROGRAM): logs every __cxa_atexit registration (time, thread, the
// handler's and the caller's DSO) to fd 2, to see which exit handlers would run before the exit guard's
// (src/jit/exit_guard.cpp; handlers run last-registered first). Diagnostics only.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
typedef int (*cxa_t)(void (*)(void*), void*, void*);
static const char* base(const char* p) { const char* s = strrchr(p, '/'); return s ? s + 1 : p; }
int __cxa_atexit(void (*f)(void*), void* arg, void* dso) {
  static cxa_t real; if (!real) real = (cxa_t)dlsym(RTLD_NEXT, "__cxa_atexit");
  Dl_info a, b; struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  char buf[400];
  int ha = dladdr((void*)f, &a), hb = dladdr(__builtin_return_address(0), &b);
  snprintf(buf, sizeof buf, "[atexit] %ld.%03ld tid=%ld fn=%s+0x%lx(%s) caller=%s\n", (long)t.tv_sec, t.tv_nsec / 1000000,
           (long)syscall(SYS_gettid), ha && a.dli_fname ? base(a.dli_fname) : "?", ha ? (unsigned long)((char*)f - (char*)a.dli_fbase) : 0UL,
           ha && a.dli_sname ? a.dli_sname : "?", hb && b.dli_fname ? base(b.dli_fname) : "?");
  ssize_t w = write(2, buf, strlen(buf));
  (void)w;
  return real(f, arg, dso);
}
