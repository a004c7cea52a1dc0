#!/bin/bash
# tools/verify_exit_repro.sh BUILD_DIR [RUNS]: reproduces `tropical verify`'s crash at exit (bench/RESULTS.md,
# "`tropical verify`'s crash at exit: reproduced") on a GPU machine and runs the variants that tell its causes apart. Fills one
# kernel cache with GPU suites, keeps a copy, then runs verify RUNS times (default 3) on that state for each
# variant, each run on a fresh copy: as is; with TROPICAL_TIERED=0 (no quick kernel from the driver's JIT,
# no background compile); and under the atexit logger (who registers exit handlers after the guard).
# A fault prints the faulting thread's backtrace (tools/fault_reporter.c). Needs a C compiler.
# Only a run that is the first to JIT the counting kernels' quick PTX is at risk (a crashed run leaves the
# driver's JIT cache as it was, a clean one fills it); libraries before the re-registration after foreground
# loads crashed there, HEAD did not (bench/RESULTS.md, "`tropical verify`'s crash at exit: fixed").
set -u
build=$(cd "$1" && pwd); runs=${2:-3}; tools=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cc -shared -fPIC -O1 -o "$work/fault_reporter.so" "$tools/fault_reporter.c" -ldl || exit 1
cc -shared -fPIC -O1 -o "$work/atexit_logger.so" "$tools/atexit_logger.c" -ldl || exit 1
export TROPICAL_CACHE_DIR="$work/cache"; mkdir -p "$TROPICAL_CACHE_DIR"
for t in int16_gpu_test swap_gpu_test gemm_gpu_test; do "$build/tests/$t" > /dev/null 2>&1; echo "$t rc=$?"; done
TROPICAL_TIERED=quick "$build/tests/batched_gpu_test" > /dev/null 2>&1; echo "batched_gpu_test (quick) rc=$?"
cp -a "$work/cache" "$work/state"
# The exit guard's handler, as the atexit logger prints it: libtropical.so.0+0x<offset of on_exit>.
guard="fn=libtropical.so.0+0x$(nm -C "$build/src/libtropical.so" | awk '/exit_guard::.*on_exit\(\)$/ && $2 == "t" {sub(/^0+/, "", $1); print $1; exit}')"
echo "exit guard handler: $guard"
run() {  # NAME ENV...: verify RUNS times on copies of the state
  local name=$1; shift
  for i in $(seq 1 "$runs"); do
    rm -rf "$work/cache"; cp -a "$work/state" "$work/cache"
    env "$@" "$build/src/tropical" verify > "$work/out" 2> "$work/err"; local rc=$?
    echo "$name run $i: rc=$rc, $(tail -1 "$work/out")"
    grep "^\[segv\]" "$work/err" | head -30
    if grep -q "^\[atexit\]" "$work/err"; then
      echo "  exit handlers registered after the guard's first (handler DSO <- caller DSO):"
      awk -v guard="$guard" 'index($0, guard){g=1} g' "$work/err" | sed 's/.*fn=\([^+]*\)+.*caller=\(.*\)/\1 <- \2/' |
        sort | uniq -c | sed 's/^/   /'
    fi
  done
}
run plain LD_PRELOAD="$work/fault_reporter.so"
run tiered0 TROPICAL_TIERED=0 LD_PRELOAD="$work/fault_reporter.so"
run logged LD_PRELOAD="$work/fault_reporter.so:$work/atexit_logger.so"
