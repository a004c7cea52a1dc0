"""Runs one benchmark binary briefly in no-GPU mode (CUDA_VISIBLE_DEVICES empty: the driver sees no
device, as on CI) and fails if it crashes or exits non-zero, or if a row reports an error other than
a skip for want of a GPU: an argument list that drifted from its kernel (bench/guard.hpp), an exception.

Usage: smoke.py BINARY [BENCHMARK ARGS...]
Google Benchmark binaries get --benchmark_format=json and a small --benchmark_min_time; every row
they run must succeed or skip with one of ALLOWED.
"""

import json
import os
import subprocess
import sys

# What a row may say without a GPU (and nothing else).
ALLOWED = ("no CUDA device", "tropical: no usable CUDA driver", "tropical: no CUDA device")


def main():
    binary, args = sys.argv[1], sys.argv[2:]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    cmd = [binary, *args, "--benchmark_format=json", "--benchmark_min_time=0.01"]
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        print(f"{os.path.basename(binary)} exited {proc.returncode}:\n{proc.stdout}")
        return 1
    rows = json.loads(proc.stdout)["benchmarks"]
    bad = []
    for row in rows:
        message = row.get("error_message", "")
        state = "skipped: " + message if row.get("error_occurred") else "ok"
        print(f"{row['name']}: {state}")
        if row.get("error_occurred") and not message.startswith(ALLOWED):
            bad.append(f"{row['name']}: {message}")
    if not rows:
        print("no row ran: the filter matches nothing")
        return 1
    for line in bad:
        print("FAILED", line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
