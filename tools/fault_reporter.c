// Preloaded into a program (gcc -shared -fPIC -o /tmp/fault_reporter.so tools/fault_reporter.c -ldl;
// LD_PRELOAD=/tmp/fault_reporter.so PROGRAM): on SIGSEGV, SIGBUS or SIGABRT it prints the faulting thread's
// id and backtrace (each frame's DSO and offset) to fd 2, then dies of the signal as before. Diagnostics
// only (bench/RESULTS.md, the verify exit crash); never in a test.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
// Writes the first n bytes of buf (snprintf's count, clamped to what buf holds).
static void put(const char* buf, int n, size_t size) {
  if (n < 0) return;
  if ((size_t)n >= size) n = (int)size - 1;
  ssize_t w = write(2, buf, (size_t)n);
  (void)w;
}

static void on_fault(int sig, siginfo_t* si, void* ctx) {
  (void)ctx;
  char buf[512];
  put(buf, snprintf(buf, sizeof buf, "\n[segv] signal %d at %p in tid %ld\n", sig, si->si_addr, (long)syscall(SYS_gettid)),
      sizeof buf);
  void* frames[64];
  int k = backtrace(frames, 64);
  for (int i = 0; i < k; ++i) {
    Dl_info d;
    int n;
    if (dladdr(frames[i], &d) && d.dli_fname) {
      const char* file = strrchr(d.dli_fname, '/') ? strrchr(d.dli_fname, '/') + 1 : d.dli_fname;
      n = snprintf(buf, sizeof buf, "[segv]  #%d %s+0x%lx %s\n", i, file,
                   (unsigned long)((char*)frames[i] - (char*)d.dli_fbase), d.dli_sname ? d.dli_sname : "");
    } else {
      n = snprintf(buf, sizeof buf, "[segv]  #%d %p\n", i, frames[i]);
    }
    put(buf, n, sizeof buf);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &sa, 0);
  sigaction(SIGBUS, &sa, 0);
  sigaction(SIGABRT, &sa, 0);
  static char alt[1 << 16];
  stack_t st = {.ss_sp = alt, .ss_size = sizeof alt};
  sigaltstack(&st, 0);
}
