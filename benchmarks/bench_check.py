"""Time `envdoctor check --no-probe` (facts and checks) against `python -m torch.utils.collect_env`,
PyTorch's own environment report, in the same environment.

    .venv/bin/python benchmarks/bench_check.py [--runs 9]
"""

from __future__ import annotations

import argparse
import statistics
import sys

from timing import interleaved, summary

ENVDOCTOR = [sys.executable, "-m", "envdoctor", "check", "--no-save", "--no-probe", "--json", "/dev/null"]
COLLECT_ENV = [sys.executable, "-m", "torch.utils.collect_env"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    runs = parser.parse_args().runs
    ours, theirs = interleaved(ENVDOCTOR, COLLECT_ENV, runs)
    print(f"runs: {runs} each, interleaved, Python {sys.version.split()[0]}")
    print(summary("envdoctor check --no-probe", ours))
    print(summary("python -m torch.utils.collect_env", theirs))
    print(f"ratio: envdoctor takes 1/{statistics.median(theirs) / statistics.median(ours):.1f} of collect_env's time")


if __name__ == "__main__":
    main()
