"""Time `envdoctor check` (facts and checks, no probe) against `python -m torch.utils.collect_env`.

Both run as fresh processes in the same environment, alternating, so machine noise hits both alike.
Prints the median of each and their ratio.

    .venv/bin/python benchmarks/bench_check.py [--runs 9]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

ENVDOCTOR = [sys.executable, "-m", "envdoctor", "check", "--no-save", "--no-probe", "--json", "/dev/null"]
COLLECT_ENV = [sys.executable, "-m", "torch.utils.collect_env"]


def seconds(argv) -> float:
    started = time.perf_counter()
    completed = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)} failed: {completed.stderr.strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    runs = parser.parse_args().runs
    seconds(ENVDOCTOR), seconds(COLLECT_ENV)  # warm the page cache for both
    ours, theirs = [], []
    for _ in range(runs):
        ours.append(seconds(ENVDOCTOR))
        theirs.append(seconds(COLLECT_ENV))
    ours_median, theirs_median = statistics.median(ours), statistics.median(theirs)
    print(f"runs: {runs} each, interleaved, Python {sys.version.split()[0]}")
    print(f"envdoctor check --no-probe      median {ours_median * 1000:7.0f} ms  (min {min(ours) * 1000:.0f}, max {max(ours) * 1000:.0f})")
    print(f"python -m torch.utils.collect_env median {theirs_median * 1000:7.0f} ms  (min {min(theirs) * 1000:.0f}, max {max(theirs) * 1000:.0f})")
    print(f"ratio: envdoctor is {theirs_median / ours_median:.1f}x faster")


if __name__ == "__main__":
    main()
