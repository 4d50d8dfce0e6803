"""Time the static `envdoctor check --no-probe` (facts and checks) against `python -m
torch.utils.collect_env`, PyTorch's own environment report, in the same environment; and
`envdoctor --version`, the floor every command pays.

    .venv/bin/python benchmarks/bench_check.py [--runs 9] [--against OTHER_CHECKOUT]

Fresh processes in rounds (one of each command per round, so machine noise hits all alike), medians
of wall and CPU time (user + system, children included), the ratio, where the time of a check goes
(the report's own timings: each collector, judging), and how many times the diagnosed interpreter
is started. `--against` times another checkout of envdoctor (its folder) in the same rounds: the
figures before and after a change, from one run on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import stat
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from timing import compile_package, measured

HERE = Path(__file__).resolve().parent.parent
CHECK = ["-m", "envdoctor", "check", "--no-save", "--no-probe"]
COLLECT_ENV = [sys.executable, "-m", "torch.utils.collect_env"]
VERSION = [sys.executable, "-m", "envdoctor", "--version"]


class Timed:
    """One command's runs: wall and CPU seconds, and the timings its reports recorded."""

    def __init__(self, label: str, argv: Sequence[str], cwd: Optional[Path] = None, report: Optional[Path] = None):
        self.label, self.argv, self.cwd, self.report = label, list(argv), cwd, report
        self.wall: List[float] = []
        self.cpu: List[float] = []
        self.phases: Dict[str, List[float]] = {}

    def run(self, kept: bool = True) -> None:
        wall, cpu = measured(self.argv, cwd=str(self.cwd) if self.cwd else None)
        if not kept:
            return
        self.wall.append(wall)
        self.cpu.append(cpu)
        if self.report:
            for phase, ms in json.loads(self.report.read_text())["timings_ms"].items():
                self.phases.setdefault(phase, []).append(ms)

    def line(self) -> str:
        wall, cpu = statistics.median(self.wall) * 1000, statistics.median(self.cpu) * 1000
        return f"{self.label:44} median {wall:6.0f} ms  (min {min(self.wall) * 1000:.0f}, max {max(self.wall) * 1000:.0f})  CPU {cpu:5.0f} ms"


def check_command(checkout: Path, report: Path, label: str) -> Timed:
    """`check --no-probe` of the envdoctor in `checkout` (started there, so `-m envdoctor` finds its package first)."""
    return Timed(label, [sys.executable, *CHECK, "--json", str(report)], cwd=checkout, report=report)


def target_starts(checkout: Path, folder: Path) -> int:
    """How many times one `check --no-probe --python WRAPPER` starts the diagnosed interpreter: the
    wrapper counts its starts, then runs this Python. `--python` itself asks the interpreter once
    what it is (envdoctor/interpreter.py); without `--python` that start is not made."""
    log = folder / "starts"
    wrapper = folder / "python"
    wrapper.write_text(f"#!/bin/sh\necho start >> '{log}'\nexec '{sys.executable}' \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    measured([sys.executable, *CHECK, "--json", os.devnull, "--python", str(wrapper)], cwd=str(checkout))
    return len(log.read_text().splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--against", type=Path, metavar="CHECKOUT", help="Another envdoctor checkout to time in the same rounds.")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        ours = check_command(HERE, folder / "ours.json", "envdoctor check --no-probe")
        commands = [ours, Timed("python -m torch.utils.collect_env", COLLECT_ENV), Timed("envdoctor --version", VERSION, cwd=HERE)]
        if options.against:
            commands.insert(1, check_command(options.against.resolve(), folder / "theirs.json", f"check --no-probe of {options.against}"))
        for checkout in (HERE, options.against):
            if checkout:
                compile_package(checkout.resolve() / "envdoctor")
        for command in commands:
            command.run(kept=False)  # warm-up round: the page cache
        for _ in range(options.runs):
            for command in commands:
                command.run()
        print(f"runs: {options.runs} of each, in rounds, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
        for command in commands:
            print(command.line())
        collect_env = statistics.median(commands[-2].wall)
        for command in commands[:-2]:
            print(f"ratio: collect_env takes {collect_env / statistics.median(command.wall):.1f}x as long as {command.label}")
        for command in commands[:-2]:
            phases = ", ".join(f"{phase} {statistics.median(ms):.0f}" for phase, ms in sorted(command.phases.items(), key=lambda p: -statistics.median(p[1])))
            print(f"phases of {command.label} (median ms, collectors overlap): {phases}")
        starts = [(command.label, target_starts(command.cwd, Path(tempfile.mkdtemp(dir=scratch)))) for command in commands[:-2]]
        for label, count in starts:
            print(f"diagnosed interpreter started by {label} --python: {count} times (one of them the --python identity check)")


if __name__ == "__main__":
    main()
