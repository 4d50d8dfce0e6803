"""`envdoctor run --bisect`: a failed command re-run under single environment changes, judged by run.bisected.

Real programs that really segfault (ctypes.string_at(0)) unless OMP_NUM_THREADS is 1; each run of a
program adds a line to a log beside it, so a test sees how often the command really ran.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from conftest import assert_checks_ran, findings_by_id, run_envdoctor
from envdoctor.probe.variations import VARIATIONS
from envdoctor.schema import report_schema

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
SINGLE_THREAD = "export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1"
PROLOGUE = """\
import ctypes, os, sys, time
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs.log"), "a") as log:
    log.write(f"{os.getpid()} {os.environ.get('OMP_NUM_THREADS')}\\n")
print("started", flush=True)
single = os.environ.get("OMP_NUM_THREADS") == "1"
"""
PROGRAMS = {
    "passes": "if not single:\n    ctypes.string_at(0)\n",
    "survives": "if not single:\n    ctypes.string_at(0)\ntime.sleep(120)\n",
    "fails": "ctypes.string_at(0)\n",
    "fails-differently": "if single:\n    sys.exit(3)\nctypes.string_at(0)\n",
}


def crash_under_bisect(folder: Path, program: str, *options: str):
    """Run PROGRAMS[program] under `envdoctor run --bisect` with no thread variable set: (run, report, runs logged)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "prog.py"
    script.write_text(PROLOGUE + PROGRAMS[program])
    run = run_envdoctor("run", "--bisect", *options, "--report-dir", str(folder / "reports"), "--", sys.executable, str(script), cwd=folder, unset=THREAD_VARIABLES + ("PYTHONNOUSERSITE",), timeout=120, child=True)
    reports = sorted((folder / "reports").glob("crash-*.json"))
    report = json.loads(reports[-1].read_text()) if reports else None
    logged = (folder / "runs.log").read_text().splitlines()
    return run, report, logged


@pytest.fixture(scope="session")
def single_thread_crash(tmp_path_factory):
    return crash_under_bisect(tmp_path_factory.mktemp("bisect"), "passes")


def ran(report: dict) -> list:
    return [v for v in report["run"]["bisection"]["variations"] if v["outcome"] != "not-applicable"]


def assert_nothing_left(logged: list) -> None:
    """Every process the command and its re-runs started has ended."""
    for line in logged:
        pid = int(line.split()[0])
        deadline = time.monotonic() + 5
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_alive(pid), f"{pid} still runs"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def assert_single_thread_named(run, report, logged, outcome: str) -> None:
    assert run.returncode == 139, run
    assert "envdoctor: bisecting: " in run.stderr and " variations in parallel" in run.stderr, run
    bisection = report["run"]["bisection"]
    assert bisection["failure"] == "killed by SIGSEGV"
    assert [v["name"] for v in bisection["variations"]] == [v.name for v in VARIATIONS]
    tried = {v["name"]: v for v in bisection["variations"]}
    assert tried["single-thread"]["outcome"] == outcome and tried["single-thread"]["command"] == SINGLE_THREAD
    assert tried["single-thread"]["tail"][0] == "started"
    assert {v["outcome"] for v in ran(report) if v["name"] != "single-thread"} == {"fails"}
    assert len(logged) == 1 + len(ran(report))  # the command once, then each applicable variation once
    [finding] = findings_by_id(report)["run.bisected"]
    assert finding["severity"] == "warning"
    assert finding["evidence"]["passing"] == ["single-thread"]
    assert finding["evidence"]["commands"] == [SINGLE_THREAD]
    assert finding["evidence"]["tried"] == {name: v["outcome"] for name, v in tried.items()}
    assert [r["command"] for r in finding["remedies"]] == [SINGLE_THREAD]
    assert_nothing_left(logged)


@pytest.mark.slow
def test_a_crash_only_with_several_threads_is_bisected_to_single_thread(single_thread_crash):
    assert_single_thread_named(*single_thread_crash, outcome="passes")
    cause = single_thread_crash[1]["diagnosis"][0]
    assert (cause["id"], cause["confidence"]) == ("run.bisected", "confirmed")
    assert cause["remedy"]["command"] == SINGLE_THREAD
    jsonschema.validate(single_thread_crash[1], report_schema())


@pytest.mark.slow
def test_a_variation_that_outlives_the_failure_survives_and_is_ended_at_its_bound(tmp_path):
    started = time.monotonic()
    run, report, logged = crash_under_bisect(tmp_path, "survives")
    assert_single_thread_named(run, report, logged, outcome="survives")
    bisection = report["run"]["bisection"]
    single = next(v for v in bisection["variations"] if v["name"] == "single-thread")
    assert bisection["timeout_s"] <= single["duration_s"] < bisection["timeout_s"] + 3
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("program", ["fails", "fails-differently"])
def test_a_failure_no_setting_undoes_is_info_and_each_variation_ran_once(tmp_path, program):
    run, report, logged = crash_under_bisect(tmp_path, program)
    assert run.returncode == 139, run
    tried = {v["name"]: v["outcome"] for v in report["run"]["bisection"]["variations"]}
    assert tried["single-thread"] == program
    assert set(tried.values()) <= {"fails", "fails-differently", "not-applicable"}
    assert len(logged) == 1 + len(ran(report))
    [finding] = findings_by_id(report)["run.bisected"]
    assert finding["severity"] == "info" and finding["evidence"]["passing"] == [] and finding["remedies"] == []
    assert finding["title"] == "No single environment change made the failure (killed by SIGSEGV) go away"


def test_a_clean_exit_is_never_bisected(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PROLOGUE)
    run = run_envdoctor("run", "--bisect", "--always-report", "--report-dir", str(tmp_path / "reports"), "--", sys.executable, str(script), cwd=tmp_path, timeout=60, child=True)
    assert run.returncode == 0, run
    report = json.loads(next((tmp_path / "reports").glob("crash-*.json")).read_text())
    assert "bisection" not in report["run"] and "run.bisected" not in findings_by_id(report)
    assert len((tmp_path / "runs.log").read_text().splitlines()) == 1
    assert "bisecting" not in run.stderr


def hostile_bisections():
    """Recorded bisections a report may hold, none of which a real run writes."""
    yield "not a mapping", ["passes"]
    yield "variations not a list", {"failure": "x", "variations": {"name": "single-thread"}}
    yield "variations of the wrong types", {"failure": None, "variations": [None, 7, "passes", {"name": 1, "command": [], "outcome": {}}]}
    yield "an unknown setting that passes", {"failure": "\x1b[31mred\x1b[0m", "variations": [{"name": "x" * 10_000, "command": "export A=\x1b]0;owned\x07", "outcome": "passes", "ending": "\u202e"}]}
    yield "thousands of variations", {"failure": "f", "variations": [{"name": f"v{i}", "command": "true", "outcome": "fails"} for i in range(5000)]}


@pytest.mark.parametrize("case", list(hostile_bisections()), ids=lambda case: case[0])
def test_a_hostile_recorded_bisection_is_judged_without_crashing(single_thread_crash, tmp_path, case):
    _, report, _ = single_thread_crash
    report = json.loads(json.dumps(report))
    report["run"]["bisection"] = case[1]
    source = tmp_path / "hostile.json"
    source.write_text(json.dumps(report))
    run = run_envdoctor("check", "--from", str(source), "--json", "-", timeout=60)
    assert run.returncode in (0, 1) and "Traceback" not in run.stderr, run
    judged = run.json()
    assert not [c for c in judged["checks"] if c["id"] == "run.bisected" and c["status"] == "crashed"]
    assert_checks_ran(judged, ran=())


@pytest.mark.slow
def test_a_variation_reaches_the_program_when_its_wrapper_script_exports_the_same_variable(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PROLOGUE + PROGRAMS["passes"])
    wrapper = tmp_path / "train.sh"
    wrapper.write_text(f"export OMP_NUM_THREADS=8 LD_LIBRARY_PATH=/opt/vendor/lib\nexec {sys.executable} {script}\n")
    run = run_envdoctor("run", "--bisect", "--report-dir", str(tmp_path / "reports"), "--", "bash", str(wrapper), cwd=tmp_path, unset=THREAD_VARIABLES + ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONNOUSERSITE"), timeout=120, child=True)
    assert run.returncode == 139, run  # the segfault, mirrored
    report = json.loads(next((tmp_path / "reports").glob("crash-*.json")).read_text())
    tried = {v["name"]: v for v in report["run"]["bisection"]["variations"]}
    assert tried["single-thread"]["outcome"] == "passes", tried["single-thread"]
    assert tried["single-thread"]["applied"] == "made again at interpreter start in 1 process: the command had changed OMP_NUM_THREADS"
    assert tried["no-ld-overrides"]["outcome"] == "not-applied"
    assert "LD_LIBRARY_PATH again before Python started" in tried["no-ld-overrides"]["applied"]
    [finding] = findings_by_id(report)["run.bisected"]
    assert finding["evidence"]["not_applied"] == {"no-ld-overrides": tried["no-ld-overrides"]["applied"]}
    cause = report["diagnosis"][0]
    assert (cause["confidence"], cause["rule"]) == ("confirmed", "bisected")
    assert cause["evidence"][0] == "re-run with only single-thread changed, the failure goes away"
