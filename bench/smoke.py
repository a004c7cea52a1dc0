"""Runs one benchmark binary briefly in no-GPU mode (CUDA_VISIBLE_DEVICES empty: the driver sees no
device, as on CI) and fails if it crashes or exits non-zero, or if a row reports an error other than
a skip for want of a GPU: an argument list that drifted from its kernel (bench/guard.hpp), an exception.

Usage: smoke.py BINARY [BENCHMARK ARGS...]
The binary gets --benchmark_out (JSON) and a small --benchmark_min_time; every row it runs must
succeed or skip with one of ALLOWED.
"""

import json
import os
import subprocess
import sys
import tempfile

# What a row may say without a GPU (and nothing else).
ALLOWED = ("no CUDA device", "tropical: no usable CUDA driver", "tropical: no CUDA device")


def main():
    binary, args = sys.argv[1], sys.argv[2:]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    with tempfile.TemporaryDirectory(prefix="tropical-smoke-") as tmp:
        out = os.path.join(tmp, "rows.json")
        # The rows go to a file: a binary with its own console reporter still writes --benchmark_out.
        cmd = [binary, *args, "--benchmark_out=" + out, "--benchmark_out_format=json", "--benchmark_min_time=0.01"]
        print("+", " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        sys.stderr.write(proc.stderr)
        if proc.returncode != 0 or not os.path.exists(out):
            print(f"{os.path.basename(binary)} exited {proc.returncode}:\n{proc.stdout}")
            return 1
        with open(out, encoding="utf-8") as f:
            rows = json.load(f)["benchmarks"]
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
