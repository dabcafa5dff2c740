"""Phase one alone on one synthetic round per (preset, size): wall time and peak memory.

The round mimics a busy ladder: half newcomers (mu 1500, sigma 350; their opponent terms are
identical), the rest mu ~ N(1500, 350), sigma ~ U(80, 200); ranks follow mu plus noise, with
~10 % of the players in ties.  Each measurement runs in a fresh subprocess (clean peak RSS).

    python bench/phase_one.py                      # 1e4, 1e5, 1e6 x mmr, mmx
    python bench/phase_one.py --sizes 1e5 --presets mmr-fast,mmx-fast
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
import numpy as np
from stream.engine import phase_one, preset
n, name = int(float(sys.argv[1])), sys.argv[2]
rng = np.random.default_rng(0)
new = rng.random(n) < 0.5
mu = np.where(new, 1500.0, rng.normal(1500, 350, n))
sigma = np.where(new, 350.0, rng.uniform(80, 200, n))
ranks = np.argsort(np.argsort(-(mu + rng.normal(0, 200, n)))) + 1
ranks[::10] = ranks[::10] // 2 * 2 + 1
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
perf = phase_one(mu, sigma, np.zeros(n), ranks, preset(name))
seconds = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "peak_mb": peak / 1024, "inputs_mb": base / 1024,
                  "finite": bool(np.isfinite(perf).all())}))
"""


def measure(n: int, name: str, timeout: float) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(n), name], capture_output=True, text=True, timeout=timeout, check=True
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e4,1e5,1e6")
    parser.add_argument("--presets", default="mmr,mmx")
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    for name in args.presets.split(","):
        for size in args.sizes.split(","):
            n = int(float(size))
            r = measure(n, name, args.timeout)
            print(f"{name:9s} n={n:>9,d}  {r['seconds']:7.2f} s  peak RSS {r['peak_mb']:6.0f} MB"
                  f"  (inputs {r['inputs_mb']:.0f} MB)  finite={r['finite']}", flush=True)


if __name__ == "__main__":
    main()
