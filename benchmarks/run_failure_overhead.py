"""What `envdoctor run` adds to the wall time of a command that fails (no --bisect): supervising it,
judging the environment it ran in, inspecting the model files it opened, and writing the report.

Runs the same crashing command alternately bare and under `envdoctor run`, ROUNDS times each, and
prints the medians and their difference. With MODEL.zip, the command opens that file first, so the
inspection of an opened model is part of what is measured.
Usage: python benchmarks/run_failure_overhead.py [ROUNDS] [MODEL.zip]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import envdoctor
from timing import compile_package

CRASH = "import ctypes, sys\nif len(sys.argv) > 1: open(sys.argv[1], 'rb').close()\nctypes.string_at(0)\n"


def wall(argv) -> float:
    started = time.perf_counter()
    subprocess.run(argv, capture_output=True)
    return time.perf_counter() - started


def main(rounds: int, model: str) -> None:
    compile_package(Path(envdoctor.__file__).parent)
    with tempfile.TemporaryDirectory() as reports:
        child = [sys.executable, "-c", CRASH] + ([model] if model else [])
        wrapped = [sys.executable, "-m", "envdoctor", "run", "--report-dir", reports, "--", *child]
        bare, under = [], []
        for _ in range(rounds):
            bare.append(wall(child))
            under.append(wall(wrapped))
    b, u = statistics.median(bare), statistics.median(under)
    print(f"failing command, median of {rounds}: bare {b:.3f} s, under envdoctor run {u:.3f} s, added {u - b:.3f} s ({u / b:.1f}x)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, sys.argv[2] if len(sys.argv) > 2 else "")
