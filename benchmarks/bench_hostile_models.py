"""Time `envdoctor inspect` on hostile models built to be slow, against inspecting a plain tiny model.

Each hostile model packs work into a few MB: 200,000 closure cells, 20,000 code objects, or 5 million
no-op opcodes. The baseline is a model whose only entry is one float: its time is start-up and zip reading.

    .venv/bin/python benchmarks/bench_hostile_models.py [--runs 5]
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import sys
import tempfile
import zipfile
from pathlib import Path

from timing import interleaved, summary


def model(path: Path, payload: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps({"learning_rate": {":type:": "<class 'function'>", ":serialized:": base64.b64encode(payload).decode()}}))
        archive.writestr("system_info.txt", "- Python: 3.11.7\n")
    return path


def cells(count: int) -> bytes:
    cell = b"h\x00G?\xb9\x99\x99\x99\x99\x99\x9a\x85R"  # _make_cell(0.1), the callee fetched from the memo
    return b"\x80\x04\x8c\x17cloudpickle.cloudpickle\x8c\n_make_cell\x93\x94(" + cell * count + b"t."


def code_objects(count: int) -> bytes:
    import cloudpickle

    return cloudpickle.dumps([(lambda p, i=i: p * i) for i in range(count)])


HOSTILE = {
    "200k closure cells": lambda: cells(200_000),
    "20k code objects": lambda: code_objects(20_000),
    "5M no-op opcodes": lambda: b"\x80\x04" + b"N0" * 5_000_000 + b"N.",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    folder = Path(tempfile.mkdtemp(prefix="envdoctor-bench-"))
    inspect = [sys.executable, "-m", "envdoctor", "inspect", "--json", "/dev/null"]
    baseline = model(folder / "plain.zip", b"\x80\x04G?\xb9\x99\x99\x99\x99\x99\x9a.")
    print(f"runs: {runs} each, interleaved with the plain model, Python {sys.version.split()[0]}")
    for label, build in HOSTILE.items():
        path = model(folder / "hostile.zip", build())
        ours, plain = interleaved([*inspect, str(path)], [*inspect, str(baseline)], runs)
        size = path.stat().st_size / 2 ** 20
        print(summary(f"{label} ({size:.1f} MB)", ours))
        print(summary("  plain model", plain))
        print(f"  judging costs {(statistics.median(ours) - statistics.median(plain)) * 1000:.0f} ms over start-up")


if __name__ == "__main__":
    main()
