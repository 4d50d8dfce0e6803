"""Time `envdoctor check --imports --no-probe` (every installed top-level module imported in
crash-isolated children) against plain `check --no-probe` on the same interpreters.

    .venv/bin/python benchmarks/bench_imports.py [--runs 5] [--python PATH ...]

Each --python is one environment (default: this interpreter); the script prints, per environment, how
many distributions and modules it holds and the median wall times.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import interleaved, summary


def command(python: str, imports: bool, report: str = "/dev/null") -> list:
    return [sys.executable, "-m", "envdoctor", "check", "--python", python, "--no-save", "--no-probe", "--json", report] + (["--imports"] if imports else [])


def size(python: str) -> str:
    """How many distributions and top-level modules one --imports run of `python` covered."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        subprocess.run(command(python, True, str(report)), capture_output=True)
        facts = json.loads(report.read_text())["facts"]["imports"]
    failed = sum(1 for m in facts["modules"] if m["status"] != "ok")
    return f"{facts['distributions']} distributions, {len(facts['modules'])} modules ({failed} failing)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", action="append", default=[])
    arguments = parser.parse_args()
    for python in arguments.python or [sys.executable]:
        with_imports, without = interleaved(command(python, True), command(python, False), arguments.runs)
        print(f"{python}: {size(python)}; runs: {arguments.runs} each, interleaved")
        print(summary("check --imports --no-probe", with_imports))
        print(summary("check --no-probe", without))


if __name__ == "__main__":
    main()
