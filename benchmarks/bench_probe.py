"""Time the full `envdoctor check` (probe ladder included) against the floor it cannot beat:
`python -c "import torch, sb3_contrib"` plus one MaskablePPO construction, in one fresh process.

Both run as fresh processes in the same environment, alternating, so machine noise hits both alike.
Prints the median of each and their ratio (the target is at most 1.3).

    .venv/bin/python benchmarks/bench_probe.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

ENVDOCTOR = [sys.executable, "-m", "envdoctor", "check", "--no-save", "--json", "/dev/null"]
FLOOR_SOURCE = """
import torch, sb3_contrib
from sb3_contrib import MaskablePPO
from sb3_contrib.common.envs import InvalidActionEnvDiscrete
MaskablePPO("MlpPolicy", InvalidActionEnvDiscrete(dim=4, ep_length=16, n_invalid_actions=1), n_steps=64, device="auto")
"""
FLOOR = [sys.executable, "-c", FLOOR_SOURCE]


def seconds(argv) -> float:
    started = time.perf_counter()
    completed = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        sys.exit(f"{argv[:4]} failed: {completed.stderr.strip()[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    seconds(ENVDOCTOR), seconds(FLOOR)  # warm the page cache for both
    ours, floor = [], []
    for _ in range(runs):
        ours.append(seconds(ENVDOCTOR))
        floor.append(seconds(FLOOR))
    ours_median, floor_median = statistics.median(ours), statistics.median(floor)
    print(f"runs: {runs} each, interleaved, Python {sys.version.split()[0]}")
    print(f"envdoctor check (with probe)           median {ours_median:6.2f} s  (min {min(ours):.2f}, max {max(ours):.2f})")
    print(f"import torch, sb3_contrib + MaskablePPO median {floor_median:6.2f} s  (min {min(floor):.2f}, max {max(floor):.2f})")
    print(f"ratio: {ours_median / floor_median:.2f}x the floor")


if __name__ == "__main__":
    main()
