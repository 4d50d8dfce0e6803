"""Shared timing for the benchmarks: fresh processes, alternated so machine noise hits both alike."""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Mapping, Optional, Sequence, Tuple


def compile_package(package: Path) -> None:
    """Bytecode for an envdoctor package folder, as an installed one has (pip compiles on install):
    where PYTHONDONTWRITEBYTECODE is set, every timed run would otherwise compile the package anew."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True, stdout=subprocess.DEVNULL)


def measured(argv: Sequence[str], cwd: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> Tuple[float, float]:
    """Wall time and CPU time (user + system, its children included) of one run of `argv`; exit
    codes 0 and 1 (findings) count as success."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv[:4])} failed: {completed.stderr.strip()[-2000:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def seconds(argv: Sequence[str]) -> float:
    """Wall time of one run of `argv`."""
    return measured(argv)[0]


def rounds(commands: Sequence[Sequence[str]], runs: int) -> List[List[float]]:
    """`runs` wall times of each command, one of each per round, after one warm-up round (page cache)."""
    for argv in commands:
        seconds(argv)
    times: List[List[float]] = [[] for _ in commands]
    for _ in range(runs):
        for argv, kept in zip(commands, times):
            kept.append(seconds(argv))
    return times


def interleaved(ours: Sequence[str], baseline: Sequence[str], runs: int) -> Tuple[List[float], List[float]]:
    """`runs` timings of each command, alternating, after one warm-up run of each (page cache)."""
    ours_times, baseline_times = rounds([ours, baseline], runs)
    return ours_times, baseline_times


def summary(label: str, times: List[float]) -> str:
    return f"{label:42} median {statistics.median(times) * 1000:7.0f} ms  (min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})"
