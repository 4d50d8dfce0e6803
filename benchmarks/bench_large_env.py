"""Time and measure `envdoctor check --no-probe` over a large conda-like environment: 10,000
distributions and a 100 MB shared object in its site-packages.

Builds a venv (no pip) whose prefix also holds a conda-meta/ folder, so the doctor reads it as a conda
environment and walks its site-packages with the ELF reader. Its site-packages gets `--distributions`
.dist-info folders (METADATA with Requires-Dist lines on each other, all met, and a long description,
as real wheels have),
conda-meta/ a record for each of the first 2,000, and a real extension of the interpreter copied and
padded to `--so-mb` MB. Then runs `check --python VENV/bin/python` in fresh processes and reports the
median wall time and the largest resident set of the doctor or any of its children (ru_maxrss of the
waited-for processes), against the limits the doctor promises: 10 s and 500 MB.

    .venv/bin/python benchmarks/bench_large_env.py [--runs 3] [--distributions 10000] [--so-mb 100]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _ctypes

from bench_packages_view import write_distribution

LIMIT_S = 10.0
LIMIT_RSS_MB = 500


def build(prefix: Path, distributions: int, so_mb: int) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True)
    python = prefix / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True, text=True, check=True).stdout.strip())
    meta = prefix / "conda-meta"
    meta.mkdir()
    for i in range(distributions):
        name = f"package-{i:05d}"
        write_distribution(site, name, "1.0.0", [f"package-{(i + 1) % distributions:05d}>=1.0", f"package-{(i + 7) % distributions:05d}; extra == \"more\""])
        if i < 2000:
            (meta / f"{name}-1.0.0-py_0.json").write_text(json.dumps({"name": name, "version": "1.0.0", "build": "py_0", "files": [f"lib/python3/site-packages/{name}/__init__.py"]}))
    extension = sorted(glob.glob(os.path.join(os.path.dirname(_ctypes.__file__), "*.so")), key=os.path.getsize)[-1]
    big = site / "libbig_extension.so"
    shutil.copyfile(extension, big)
    with open(big, "ab") as stream:
        stream.truncate(so_mb * 2**20)  # the object's own sections stay where they were; the rest is padding
        stream.seek(os.path.getsize(extension))
        chunk = os.urandom(2**20)
        while stream.tell() < so_mb * 2**20:
            stream.write(chunk)  # real bytes, not a hole: the page cache holds what a real .so would
    return python


def one_run(python: Path, cwd: str) -> tuple:
    """(seconds, largest RSS in MB) of one check in a fresh process."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--no-save", "--no-probe", "--python", str(python), "--json", "found.json"], cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        sys.exit(f"check failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--distributions", type=int, default=10000)
    parser.add_argument("--so-mb", type=int, default=100)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        python = build(Path(folder) / "env", options.distributions, options.so_mb)
        print(f"built {options.distributions} distributions and a {options.so_mb} MB .so in {time.perf_counter() - started:.1f} s")
        one_run(python, folder)  # warm the page cache
        runs = [one_run(python, folder) for _ in range(options.runs)]
        report = json.loads((Path(folder) / "found.json").read_text())
        conda = report["facts"]["target"].get("conda", {})
        runtime = conda.get("cxx_runtime", {})
        print(f"distributions seen: {len(report['facts']['target'].get('distributions', []))}, conda records: {len(conda.get('records', []))}, shared objects read: {runtime.get('objects_read')}")
    times = [seconds for seconds, _ in runs]
    rss = max(mb for _, mb in runs)
    print(f"check --no-probe: median {statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}) over {options.runs} runs; limit {LIMIT_S:.0f} s")
    print(f"largest resident set of the doctor or a child: {rss:.0f} MB; limit {LIMIT_RSS_MB} MB")
    if statistics.median(times) > LIMIT_S or rss > LIMIT_RSS_MB:
        sys.exit("over a limit")


if __name__ == "__main__":
    main()
