#!/usr/bin/env bash
# Builds tools/bits_wgmma_lab.cu for sm_90a (wgmma .b1: Hopper only) and runs it on the GPU: the wgmma ceiling,
# then every variant in a process of its own (a variant that faults or deadlocks takes only itself down, under a
# time limit), first on the odd sizes (checked bit for bit against the reference), then timed at each N^3
# (default 16384 8192; also checked). The build log (ptxas registers and spills) and the table go to
# $OUT/bits_wgmma_lab (or /tmp/bits_wgmma_lab). Arguments: the timed sizes.
#   tools/bits_wgmma_lab.sh            (on the device machine, from the repository root)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp}/bits_wgmma_lab
mkdir -p "$out"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" --version | tail -1
lab=$(mktemp -d)/bits_wgmma_lab  # the binary stays out of $OUT (only the logs come back)
"$nvcc" -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Xptxas -v -o "$lab" \
  "$root/tools/bits_wgmma_lab.cu" > "$out/build.txt" 2>&1 || { cat "$out/build.txt"; exit 1; }
echo "ptxas (registers, spill stores):"
awk '/Compiling entry function/{name=$0; sub(/.*function ./,"",name); sub(/. for .*/,"",name)}
     /spill stores/{sp=$5 " " $6 " " $7} /Used [0-9]+ registers/{print "  " $5 " regs, " sp "  " name}' \
  "$out/build.txt" | { command -v c++filt > /dev/null && c++filt || cat; } | sed 's/(.*//'
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$out/clocks.csv" 2>/dev/null &
sampler=$!
{
  timeout 60 "$lab" --ceiling || echo "ceiling: exit $?"
  count=$("$lab" --list)
  for phase in --odd --timed; do
    [ "$phase" = --odd ] && echo "--- checked: C = I (256 x 256 x 1024), then odd sizes (density 0.05)" ||
      echo "--- timed (median of 7 after 2) and checked: ${*:-16384 8192} cubed"
    for ((i = 0; i < count; ++i)); do
      timeout 120 "$lab" --variant "$i" "$phase" "$@" || echo "variant $i $phase: exit $? (124: timed out)"
    done
  done
} 2>&1 | tee "$out/table.txt"
kill "$sampler" 2>/dev/null
sort -n "$out/clocks.csv" | awk -F', ' 'NF == 2 {c[n++] = $1; if ($2 > p) p = $2}
  END {if (n) printf "SM clock during the run: min %s, median %s, max %s MHz; peak power %s W\n", c[0], c[int(n/2)], c[n-1], p}'
