"""Time the full `envdoctor check` (probe ladder included) against the floor it cannot beat:
`python -c "import torch, sb3_contrib"` plus one MaskablePPO construction, in one fresh process.

Both run as fresh processes in the same environment, alternating, so machine noise hits both alike.
Prints the median of each and their ratio (the target is at most 1.3).

    .venv/bin/python benchmarks/bench_probe.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys

from timing import interleaved, summary

ENVDOCTOR = [sys.executable, "-m", "envdoctor", "check", "--no-save", "--json", "/dev/null"]
FLOOR_SOURCE = """
import torch, sb3_contrib
from sb3_contrib import MaskablePPO
from sb3_contrib.common.envs import InvalidActionEnvDiscrete
MaskablePPO("MlpPolicy", InvalidActionEnvDiscrete(dim=4, ep_length=16, n_invalid_actions=1), n_steps=64, device="auto")
"""
FLOOR = [sys.executable, "-c", FLOOR_SOURCE]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    ours, floor = interleaved(ENVDOCTOR, FLOOR, runs)
    print(f"runs: {runs} each, interleaved, Python {sys.version.split()[0]}")
    print(summary("envdoctor check (with probe)", ours))
    print(summary("import torch, sb3_contrib + MaskablePPO", floor))
    print(f"ratio: {statistics.median(ours) / statistics.median(floor):.2f}x the floor")


if __name__ == "__main__":
    main()
