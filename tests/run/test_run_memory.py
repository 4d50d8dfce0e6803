"""run.memory-growth: steady growth of a command's memory, fitted from its samples, and the limit it heads for.

Real programs through `envdoctor run` (a capture thread that leaks then segfaults, growth into an
address-space limit, memory taken once at the start), and the fit itself over generated timelines.
"""

from __future__ import annotations

import json
import math
import random
import shlex
import sys
from pathlib import Path
from typing import Optional

import pytest

from conftest import findings_by_id, run_envdoctor
from envdoctor.capture import chart
from envdoctor.engine import Selection, judge
from envdoctor.facts import run_describe, run_growth

MIB, GIB = 1 << 20, 1 << 30
EVIDENCE = {"slope_bytes_per_min", "r2", "start_bytes", "end_bytes", "limit_name", "limit_bytes", "projected_s", "near_limit", "sustained"}
LEAKING_CAPTURE_THREAD = """\
import ctypes, threading, time
frames = []
def capture_frames():
    while True:
        frames.append(b"\\x01" * (2 << 20))
        time.sleep(0.05)
threading.Thread(target=capture_frames, daemon=True).start()
time.sleep(3)
ctypes.string_at(0)
"""
GROWS_WITHOUT_END = """\
import time
kept = []
while True:
    kept.append(b"\\x01" * (4 << 20))
    time.sleep(0.02)
"""
LOADS_ONCE = """\
import ctypes, time
model = b"\\x01" * (300 << 20)
time.sleep(3)
ctypes.string_at(0)
"""
ADDRESS_SPACE_KIB = 800_000


def run_program(folder: Path, source: str, address_space_kib: Optional[int] = None):
    """`envdoctor run` of `source` sampled every 0.1 s (under `ulimit -v` when given): the run and its saved report."""
    script = folder / "prog.py"
    script.write_text(source)
    command = [sys.executable, str(script)]
    if address_space_kib:
        command = ["bash", "-c", f"ulimit -v {address_space_kib}; exec {shlex.join(command)}"]
    run = run_envdoctor("run", "--sample-interval", "0.1", "--report-dir", str(folder / "reports"), "--", *command, cwd=folder, timeout=120, child=True)
    report = json.loads(next((folder / "reports").glob("crash-*.json")).read_text())
    return run, report


@pytest.mark.slow
def test_a_short_leak_that_segfaults_far_from_any_limit_is_a_note_not_the_cause(tmp_path):
    run, report = run_program(tmp_path, LEAKING_CAPTURE_THREAD)
    assert run.returncode == 139, run
    [found] = findings_by_id(report)["run.memory-growth"]
    evidence = found["evidence"]
    assert found["severity"] == "info" and set(evidence) == EVIDENCE
    assert evidence["near_limit"] is False and evidence["sustained"] is False
    assert 500 * MIB <= evidence["slope_bytes_per_min"] <= 5 * GIB  # 2 MiB every 50 ms is 2.3 GiB/min
    assert evidence["r2"] >= 0.8 and evidence["end_bytes"] - evidence["start_bytes"] >= 40 * MIB
    assert evidence["limit_name"] in ("RAM", "memory cgroup") and evidence["projected_s"] > report["run"]["duration_s"]
    assert report["run"]["memory"]["ram_total_bytes"] > 0
    assert "GiB/min" in found["title"] and "reaches the" not in found["title"]  # a ramp is not projected
    assert "RSS grows" not in run.stderr  # nor drawn as a trend under the chart
    assert "run.crashed" in findings_by_id(report)
    assert list((tmp_path / "reports").glob("crash-*.png"))
    assert "run.memory-growth" not in [cause["id"] for cause in report["diagnosis"]]


@pytest.mark.slow
def test_growth_into_an_address_space_limit_is_an_error_that_names_the_limit(tmp_path):
    run, report = run_program(tmp_path, GROWS_WITHOUT_END, ADDRESS_SPACE_KIB)
    assert run.returncode == 1 and "MemoryError" in run.stderr, run
    [found] = findings_by_id(report)["run.memory-growth"]
    evidence = found["evidence"]
    assert found["severity"] == "error"
    assert evidence["limit_name"] == "address-space" and evidence["limit_bytes"] == ADDRESS_SPACE_KIB * 1024
    assert evidence["projected_s"] <= 1.1 * report["run"]["duration_s"] + 0.2
    assert "address-space limit at ~" in found["title"]
    cause = report["diagnosis"][0]
    assert (cause["id"], cause["confidence"]) == ("run.out-of-memory", "confirmed")
    assert any("address-space limit" in line for line in cause["evidence"])
    assert not any("had mapped 0 MiB" in line for line in cause["evidence"])  # the peak, not the dead process's last sample


IMPOSSIBLE_REQUESTS = {
    "numpy": "import numpy as np\nbuffer = np.zeros((1 << 20, 1 << 20, 1 << 10), dtype=np.uint8)\n",
    "torch": "import torch\nbuffer = torch.empty(1 << 50, dtype=torch.uint8)\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("library", sorted(IMPOSSIBLE_REQUESTS))
def test_one_request_larger_than_all_memory_is_a_wrong_size_not_memory_used_up(tmp_path, library):
    """1 PiB asked at once: no limit was reached and more memory would not help."""
    run, report = run_program(tmp_path, IMPOSSIBLE_REQUESTS[library])
    assert run.returncode == 1, run
    cause = report["diagnosis"][0]
    assert (cause["id"], cause["confidence"]) == ("run.out-of-memory", "confirmed")
    [found] = findings_by_id(report)["run.out-of-memory"]
    assert found["evidence"]["asked_bytes"] == 1 << 50
    assert found["title"].startswith("One allocation asked for 1048576.0 GiB, more than this machine's ") and "a size computed wrong" in found["title"]


@pytest.mark.slow
def test_memory_taken_once_at_the_start_is_not_growth(tmp_path):
    run, report = run_program(tmp_path, LOADS_ONCE)
    assert run.returncode == 139, run
    assert report["run"]["memory"]["peak_rss_bytes"] >= 300 * MIB
    assert "run.memory-growth" not in findings_by_id(report)
    assert "RSS grows" not in run.stderr


def timeline(values, step_s: float = 0.5):
    """Samples as the tree sampler records them, one per `step_s`, from a list of RSS values."""
    return [{"t": round(i * step_s, 3), "rss_bytes": int(v), "vms_max_bytes": int(v) + 50 * MIB, "cpu_percent": 100.0, "processes": 1} for i, v in enumerate(values)]


def noisy(values, spread: float, seed: int = 1):
    rng = random.Random(seed)
    return [v + rng.uniform(-spread, spread) for v in values]


def not_growth():
    """Timelines that are not a leak, however they move."""
    yield "flat with noise", timeline(noisy([2 * GIB] * 120, 20 * MIB))
    yield "a model loaded in the first seconds", timeline([100 * MIB + min(i, 10) * 200 * MIB for i in range(120)])
    yield "garbage collection's sawtooth", timeline([1 * GIB + (i % 10) * 40 * MIB for i in range(120)])
    yield "a creep under 1 MiB/min", timeline([500 * MIB + i * 0.004 * MIB for i in range(120)])
    yield "growth small beside its size", timeline([10 * GIB + i * 0.05 * MIB for i in range(120)])
    yield "too few samples", timeline([100 * MIB + i * 100 * MIB for i in range(7)])
    yield "one sample", timeline([GIB])
    yield "no samples", []


def hostile_samples():
    """What a recorded report may hold instead of samples."""
    base = timeline([100 * MIB + i * 10 * MIB for i in range(40)])
    yield "not a list", {"t": 1}
    yield "strings", [{**s, "rss_bytes": str(s["rss_bytes"])} for s in base]
    yield "NaN and infinity", [{**s, "rss_bytes": (math.nan, math.inf, -math.inf)[i % 3]} for i, s in enumerate(base)]
    yield "booleans", [{**s, "rss_bytes": True} for s in base]
    yield "all at one time", [{**s, "t": 5.0} for s in base]
    yield "not mappings", [None, 7, "x", [1, 2]] * 10
    yield "huge numbers", [{**s, "rss_bytes": 10 ** 300 + i} for i, s in enumerate(base)]


@pytest.mark.parametrize("case", list(not_growth()) + list(hostile_samples()), ids=lambda case: case[0])
def test_what_is_not_steady_growth_is_not_reported(case):
    assert run_growth.steady_growth({"samples": case[1], "ram_total_bytes": 16 * GIB}) is None


def test_steady_growth_is_fitted_and_projected_to_the_nearest_limit():
    """100 MiB growing 50 MiB/min: the 1 GiB cgroup limit comes before 16 GiB of RAM, at (1024-100)/50 min."""
    memory = {
        "samples": timeline([100 * MIB + 50 * MIB * i * 0.5 / 60 for i in range(120)] + [40 * MIB, 0]),  # then its teardown
        "cgroups": [{"path": "/sys/fs/cgroup/job", "limit_bytes": GIB}, {"path": "/sys/fs/cgroup", "limit_bytes": None}],
        "ram_total_bytes": 16 * GIB,
        "address_space_limit_bytes": None,
    }
    found = run_growth.steady_growth(memory)
    assert found["slope_bytes_per_min"] == pytest.approx(50 * MIB, rel=1e-6) and found["r2"] == pytest.approx(1.0)
    assert (found["limit_name"], found["limit_bytes"]) == ("memory cgroup", GIB)
    assert found["projected_s"] == pytest.approx((1024 - 100) / 50 * 60, abs=0.1)
    assert found["end_bytes"] == pytest.approx(100 * MIB + 50 * MIB * 59.5 / 60, abs=1)
    run = {"memory": memory, "duration_s": 61.0, "gpu": {"devices": []}}
    assert chart.text_chart(run)[-1].strip() == "RSS grows 50 MiB/min; reaches the 1.0 GiB memory cgroup limit at ~18 min"
    assert chart.picture(run).startswith(b"\x89PNG")
    memory["address_space_limit_bytes"] = 400 * MIB  # the address space (RSS + 50 MiB here) meets this one first
    assert run_growth.steady_growth(memory)["limit_name"] == "address-space"


def test_a_start_up_ramp_is_neither_drawn_as_a_trend_nor_projected():
    """6 s rising 600 MiB/min far from 16 GiB of RAM: imports and a model loading as far as anyone can tell."""
    memory = {"samples": timeline([100 * MIB + 600 * MIB * i * 0.5 / 60 for i in range(12)]), "cgroups": [], "ram_total_bytes": 16 * GIB, "address_space_limit_bytes": None}
    found = run_growth.steady_growth(memory)
    assert found["projected_s"] is not None and not run_growth.more_than_a_ramp(found)
    assert run_describe.growth_caption(found) == "RSS grows 600 MiB/min"
    run = {"memory": memory, "duration_s": 6.0, "gpu": {"devices": []}}
    assert [line.split()[0] for line in chart.text_chart(run)] == ["RSS"]
    memory["ram_total_bytes"] = 170 * MIB  # the same rise ending within 10 % of the RAM: drawn and projected
    assert chart.text_chart(run)[-1].strip().startswith("RSS grows 600 MiB/min; reaches the 170 MiB RAM limit at")


def recorded_run(kind: str, address_space_limit: int):
    """A run that grew 100 MiB → 1 GiB at a steady rate for 60 s, under an address-space limit."""
    samples = timeline([100 * MIB + 900 * MIB * i / 120 for i in range(121)])
    status = {"signal": 139, "exit": 1, "hang": 124, "clean": 0}[kind]
    return {
        "command": ["python", "train.py"],
        "duration_s": 60.5,
        "hang_timeout_s": 30.0 if kind == "hang" else None,
        "sample_interval_s": 0.5,
        "ending": {"kind": kind, "returncode": -11 if kind == "signal" else status, "exit_status": status, "signal": 11 if kind == "signal" else None, "signal_name": "SIGSEGV" if kind == "signal" else None, "signal_meaning": None, "forwarded_signals": []},
        "python_stacks": None,
        "output_tail": [],
        "memory": {"samples": samples, "peak_rss_bytes": GIB, "peak_rss_at_s": 60.0, "address_space_limit_bytes": address_space_limit, "ram_total_bytes": 64 * GIB, "cgroups": [], "kernel_oom_lines": []},
        "gpu": {"source": None, "devices": [], "samples": [], "problems": []},
    }


NEAR, FAR = GIB + 100 * MIB, 4 * GIB  # met at ~65 s, just after the run's 60.5 s; met at ~4 min


@pytest.mark.parametrize("kind, limit, severity", [("signal", NEAR, "error"), ("exit", NEAR, "error"), ("signal", FAR, "warning"), ("hang", NEAR, "warning"), ("clean", NEAR, "warning"), ("signal", 64 * GIB, "warning")])
def test_growth_is_an_error_only_when_the_command_died_as_the_trend_met_its_limit(kind, limit, severity):
    judged = judge({}, None, Selection(only=("run.memory-growth",)), recorded_run(kind, limit))
    assert [r.status.value for r in judged.runs if r.id == "run.memory-growth"] == ["found"]
    [found] = [f for f in judged.findings if f.id == "run.memory-growth"]
    assert found.severity.value == severity and found.evidence["limit_name"] == "address-space"
    assert found.remedies[0].command == "PYTHONTRACEMALLOC=1 python train.py"


def ramp_run(seconds: float, limit: int, kind: str = "signal"):
    """A run whose RSS rose 150 → 300 MiB at a steady rate over `seconds` (torch and SB3 importing), then died."""
    run = recorded_run(kind, limit)
    steps = int(seconds / 0.5)
    run["memory"]["samples"] = timeline([150 * MIB + 150 * MIB * i / steps for i in range(steps + 1)])
    run["duration_s"] = seconds + 0.5
    return run


@pytest.mark.parametrize("kind", ["signal", "exit"])
def test_a_start_up_ramp_far_from_every_limit_is_a_note_and_never_the_headline(kind):
    judged = judge({}, None, Selection(), ramp_run(8.0, 64 * GIB, kind))
    [found] = [f for f in judged.findings if f.id == "run.memory-growth"]
    assert found.severity.value == "info" and not found.evidence["sustained"] and not found.evidence["near_limit"]
    assert "run.memory-growth" not in [c.id for c in judged.diagnosis]


def test_growth_that_ended_near_its_limit_is_a_likely_cause_of_a_segfault():
    judged = judge({}, None, Selection(), ramp_run(8.0, 320 * MIB + 50 * MIB))  # the address space ends at 350 of 370 MiB
    [found] = [f for f in judged.findings if f.id == "run.memory-growth"]
    assert found.evidence["near_limit"] is True
    assert (judged.diagnosis[0].id, judged.diagnosis[0].confidence) == ("run.memory-growth", "likely")


def test_growth_sustained_far_from_its_limit_is_never_blamed_for_a_segfault():
    judged = judge({}, None, Selection(), recorded_run("signal", 64 * GIB))
    [found] = [f for f in judged.findings if f.id == "run.memory-growth"]
    assert found.evidence["sustained"] is True and found.severity.value == "warning"
    assert [c.confidence for c in judged.diagnosis if c.id == "run.memory-growth"] in ([], ["possible"])
    assert judged.diagnosis[0].id != "run.memory-growth"
