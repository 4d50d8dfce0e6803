"""Shared timing for the benchmarks: fresh processes, alternated so machine noise hits both alike."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from typing import List, Sequence, Tuple


def seconds(argv: Sequence[str]) -> float:
    """Wall time of one run of `argv`; exit codes 0 and 1 (findings) count as success."""
    started = time.perf_counter()
    completed = subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv[:4])} failed: {completed.stderr.strip()[-2000:]}")
    return elapsed


def interleaved(ours: Sequence[str], baseline: Sequence[str], runs: int) -> Tuple[List[float], List[float]]:
    """`runs` timings of each command, alternating, after one warm-up run of each (page cache)."""
    seconds(ours), seconds(baseline)
    ours_times, baseline_times = [], []
    for _ in range(runs):
        ours_times.append(seconds(ours))
        baseline_times.append(seconds(baseline))
    return ours_times, baseline_times


def summary(label: str, times: List[float]) -> str:
    return f"{label:42} median {statistics.median(times) * 1000:7.0f} ms  (min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})"
