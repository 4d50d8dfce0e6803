"""Time `envdoctor fleet --reports` over a generated fleet of 10,000 node reports, with its peak memory.

One real report is produced first (`envdoctor check --json`, no probe), then copied once per node with a
few aspects varied on a few nodes, as a Slurm job array leaves them in a shared folder:
OMP_NUM_THREADS=64 on every 1000th node (from node00007), NumPy 1.26.4 on 3 nodes, another kernel on 5,
and one file that a killed task left unfinished. The timing is the whole CLI in a fresh process
(start-up included), the median of several runs after one warm-up (page cache), with a worker per
usable CPU against `--workers 1` (all in one process), interleaved; peak memory is the largest sum
of resident memory over the process and its workers, sampled every 20 ms.

    .venv/bin/python benchmarks/bench_fleet.py [--nodes 10000] [--runs 5] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import psutil

from envdoctor.fleet.stream import usable_cpus

SAMPLE_S = 0.02
Change = Callable[[dict], None]


def real_report(folder: Path) -> dict:
    """One report of this machine, as `envdoctor check --json` writes it."""
    path = folder / "real.json"
    argv = [sys.executable, "-m", "envdoctor", "check", "--no-save", "--no-probe", "--json", str(path)]
    completed = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if completed.returncode not in (0, 1):
        sys.exit(f"envdoctor check failed: {completed.stderr.strip()[-2000:]}")
    return json.loads(path.read_text(encoding="utf-8"))


def set_variable(name: str, value: str) -> Change:
    return lambda report: report["facts"]["environ"]["variables"].__setitem__(name, value)


def set_distribution(name: str, version: str) -> Change:
    def change(report: dict) -> None:
        distributions = report["facts"]["target"]["distributions"]
        found = [d for d in distributions if d["name"].lower() == name]
        if found:
            found[0]["version"] = version
        else:
            distributions.append({"name": name, "version": version})

    return change


def set_kernel(release: str) -> Change:
    return lambda report: report["facts"]["system"].__setitem__("kernel_release", release)


def variations(nodes: int) -> Dict[int, Change]:
    """The odd nodes by index: a few groups of outliers spread over the fleet."""
    changes: Dict[int, Change] = {i: set_variable("OMP_NUM_THREADS", "64") for i in range(7, nodes, 1000)}
    changes.update({i: set_distribution("numpy", "1.26.4") for i in (101, 4242, 9001) if i < nodes})
    changes.update({i: set_kernel("5.15.0-1057-aws") for i in (33, 333, 3333, 5555, 7777) if i < nodes})
    return changes


def write_fleet(folder: Path, report: dict, nodes: int) -> Tuple[int, int]:
    """`nodes` reports named nodeNNNNN.json; the number of bytes written and of odd nodes."""
    changes = variations(nodes)
    plain = json.dumps(report, indent=2) + "\n"
    written = 0
    for i in range(nodes):
        if i in changes:
            varied = json.loads(plain)
            changes[i](varied)
            text = json.dumps(varied, indent=2) + "\n"
        else:
            text = plain.replace(report["created"], f"{report['created'][:17]}{i % 60:02d}{report['created'][19:]}", 1)
        if i == nodes - 1:
            text = text[: len(text) // 2]  # a task killed while writing its report
        (folder / f"node{i:05d}.json").write_text(text, encoding="utf-8")
        written += len(text)
    return written, len(changes) + 1


def tree_rss(process: psutil.Process) -> int:
    """Resident memory of `process` and all its descendants, in bytes (0 for those already gone)."""
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            continue
    return total


def timed_run(argv: List[str]) -> Tuple[float, int]:
    """Wall time of `argv` and the peak resident memory of its process tree."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    process, peak = psutil.Process(child.pid), 0
    while child.poll() is None:
        try:
            peak = max(peak, tree_rss(process))
        except psutil.Error:
            pass
        time.sleep(SAMPLE_S)
    elapsed = time.perf_counter() - started
    stderr = child.stderr.read().decode(errors="replace") if child.stderr else ""
    if child.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv[:5])} failed: {stderr.strip()[-2000:]}")
    return elapsed, peak


def interleaved(ours: List[str], other: List[str], runs: int) -> Tuple[list, list]:
    """`runs` (seconds, peak bytes) of each command, alternating, so machine noise hits both alike."""
    results: Tuple[list, list] = ([], [])
    for _ in range(runs):
        results[0].append(timed_run(ours))
        results[1].append(timed_run(other))
    return results


def summary(label: str, results: list) -> str:
    times, peaks = [r[0] for r in results], [r[1] for r in results]
    return (f"{label:36} median {statistics.median(times):6.2f} s (min {min(times):.2f}, max {max(times):.2f}),"
            f" peak memory {max(peaks) / 2 ** 20:.0f} MiB (process and workers)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the generated reports and print their folder")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="envdoctor-bench-fleet-"))
    try:
        fleet = folder / "fleet"
        fleet.mkdir()
        report = real_report(folder)
        written, odd = write_fleet(fleet, report, args.nodes)
        print(f"{args.nodes} reports of {written / args.nodes / 1024:.0f} KB on average ({written / 2 ** 20:.0f} MB), {odd} odd nodes;"
              f" Python {sys.version.split()[0]}, {psutil.cpu_count()} CPUs")
        print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        argv = [sys.executable, "-m", "envdoctor", "fleet", "--reports", str(fleet), "--json", str(folder / "fleet-view.json")]
        timed_run(argv)
        pooled, alone = interleaved(argv, [*argv, "--workers", "1"], args.runs)
        print(summary(f"fleet --reports ({usable_cpus()} workers)", pooled))
        print(summary("fleet --reports --workers 1", alone))
        print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        if args.keep:
            print(f"reports kept in {fleet}")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
