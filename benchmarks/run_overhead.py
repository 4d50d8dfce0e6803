"""How much slower a CPU-bound child runs under `envdoctor run` than bare.

Runs the same pure-Python loop alternately bare and wrapped, ROUNDS times each, and prints the
median and minimum of the child's own measured loop time and of the whole wall time (which adds envdoctor's
start-up). Usage: python benchmarks/run_overhead.py [ROUNDS] [LOOP_SECONDS_HINT]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

CHILD = """
import time
started = time.perf_counter()
total = 0
for i in range({n}):
    total += i * i % 7
print(f"loop_s={{time.perf_counter() - started:.4f}}")
"""


def timed(argv) -> tuple:
    started = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - started
    loop = float(out.strip().rsplit("loop_s=", 1)[1])
    return loop, wall


def main(rounds: int, n: int) -> None:
    child = [sys.executable, "-c", CHILD.format(n=n)]
    wrapped = [sys.executable, "-m", "envdoctor", "run", "--", *child]
    bare, under = [], []
    for _ in range(rounds):
        bare.append(timed(child))
        under.append(timed(wrapped))
    for label, index in (("child loop", 0), ("wall", 1)):
        for statistic in (statistics.median, min):  # min: the least disturbed run, for noisy shared machines
            b, u = statistic(x[index] for x in bare), statistic(x[index] for x in under)
            print(f"{label:<10} {statistic.__name__:<6} bare {b:.3f} s  under envdoctor run {u:.3f} s  overhead {100 * (u - b) / b:+.1f}%")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7, int(float(sys.argv[2]) * 12_000_000) if len(sys.argv) > 2 else 36_000_000)
