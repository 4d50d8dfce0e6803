"""Time the packages view of an environment with 2,000 distributions.

Builds a synthetic site-packages (2,000 .dist-info folders whose METADATA carries Requires-Dist
lines and a long description, like real wheels; a torch among them with torch/version.py and its
nvidia-* pins), then times, as the median of several runs:
- the target facts script run under this interpreter with that folder on its path (what
  `envdoctor check` pays, interpreter start included);
- the doctor-side view over those facts: CUDA families of the nvidia-* wheels, torch's build and
  pins, and the NumPy 1.x requirements (the wheels, cuda and numpy checks).

    .venv/bin/python benchmarks/bench_packages_view.py [--runs 7] [--distributions 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from envdoctor.checks import cuda, numpy, wheels
from envdoctor.collect.target import run_target_script

TORCH_PINS = [f"nvidia-{lib}-cu12==12.8.90; platform_system == \"Linux\"" for lib in ("cuda-runtime", "cublas", "cufft", "curand")]
DESCRIPTION = "A line of the long description that pip leaves in METADATA.\n" * 200


def write_distribution(site: Path, name: str, version: str, requires) -> None:
    folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir()
    header = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", *(f"Requires-Dist: {r}" for r in requires)]
    (folder / "METADATA").write_text("\n".join(header) + "\n\n" + DESCRIPTION)


def synthetic_site(site: Path, count: int) -> None:
    write_distribution(site, "torch", "2.8.0", TORCH_PINS)
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text("__version__ = '2.8.0+cu128'\ncuda = '12.8'\nhip = None\n")
    write_distribution(site, "numpy", "2.1.3", [])
    for lib in ("cuda-runtime", "cublas", "cufft", "curand"):
        write_distribution(site, f"nvidia-{lib}-cu12", "12.8.90", [])
    for i in range(count - 6):
        write_distribution(site, f"package-{i:04d}", "1.0.0", ["numpy>=1.21", "requests>=2", f"package-{(i + 1) % count:04d}"])


def median_ms(action, runs: int) -> tuple:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), min(times), max(times)


def judge_view(facts: dict) -> None:
    wheels.families(facts)
    wheels.pin_problems(facts)
    cuda.cuda_build(facts)
    list(numpy.abi_mismatch(facts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--distributions", type=int, default=2000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        site = Path(folder)
        synthetic_site(site, options.distributions)
        env = {**os.environ, "PYTHONPATH": str(site)}
        facts = {"target": run_target_script(sys.executable, "facts", env=env)}  # also warms the page cache
        found = len(facts["target"]["distributions"])
        script = median_ms(lambda: run_target_script(sys.executable, "facts", env=env), options.runs)
        view = median_ms(lambda: judge_view(facts), options.runs)
    print(f"{found} distributions seen, {options.runs} runs, Python {sys.version.split()[0]}")
    print(f"target facts script (child, startup included)  median {script[0]:7.1f} ms  (min {script[1]:.1f}, max {script[2]:.1f})")
    print(f"doctor-side view (families, pins, numpy ABI)   median {view[0]:7.1f} ms  (min {view[1]:.1f}, max {view[2]:.1f})")


if __name__ == "__main__":
    main()
