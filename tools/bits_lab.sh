#!/usr/bin/env bash
# Builds tools/bits_lab.cu, with the library's own tuned bits fragment once per candidate tile of codegen/spec.py
# (variants "lib <name>"; tools/bits_lab_fragments.py, where codegen runs), and runs every variant on the GPU,
# printing one table; the build log (ptxas registers and spills) and the table go to $OUT/bits_lab (or
# /tmp/bits_lab). Arguments go to bits_lab (sizes; default 16384 8192).
#   tools/bits_lab.sh            (on the device machine, from the repository root)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp}/bits_lab
mkdir -p "$out"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
flags=()
if python3 "$root/tools/bits_lab_fragments.py" "$out/library_tiles.cuh" > "$out/generate.txt" 2>&1; then
  flags=("-DLAB_FRAGMENTS=\"$out/library_tiles.cuh\"")
  echo "library tiles: $(cat "$out/generate.txt")"
else
  echo "codegen failed (see $out/generate.txt): no library variants"
fi
"$nvcc" --version | tail -1
"$nvcc" -O3 -arch=sm_90 -Xptxas -v "${flags[@]}" -o "$out/bits_lab" "$root/tools/bits_lab.cu" > "$out/build.txt" 2>&1 ||
  { cat "$out/build.txt"; exit 1; }
echo "spills (ptxas; none listed: none):"
awk '/Compiling entry function|Function properties for/{name=$NF} /spill stores/ && !/ 0 bytes spill stores/{print "  " name ": " $0}' \
  "$out/build.txt"
# SM clock and power sampled through the run (the ceiling's P/s is clock-bound).
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 200 > "$out/clocks.csv" 2>/dev/null &
sampler=$!
"$out/bits_lab" "$@" 2>&1 | tee "$out/table.txt"
kill "$sampler" 2>/dev/null
sort -n "$out/clocks.csv" | awk -F', ' 'NF == 2 {c[n++] = $1; if ($2 > p) p = $2}
  END {if (n) printf "SM clock during the run: min %s, median %s, max %s MHz; peak power %s W\n", c[0], c[int(n/2)], c[n-1], p}'
