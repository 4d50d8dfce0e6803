"""Verdicts that follow the evidence: the probe's own measurements and the child's CPU time decide how
bad a finding is, and the remedies for a probe that ran out of time really give it more time.

Reports are real: `check --no-probe --json` of the dev venv, and real ladders run in a child (up to
the thread pools, or into a stand-in numpy that spins or sleeps), then judged with `check --from`.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from conftest import TEST_DATA, assert_checks_ran, changed_report, findings_by_id, run_envdoctor
from envdoctor.codec import encode
from envdoctor.probe import ladder
from envdoctor.probe.probing import run_probe
from envdoctor.probe.runner import DEFAULT_TIMEOUT_S, ProbeOptions, ladder_argv, run_ladder

pytestmark = pytest.mark.xdist_group("recorded-probes")  # its expensive fixtures are built once, on one worker

H100 = TEST_DATA / "reports" / "h100-cu130.json"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")
MIXED_WHEELS = (("nvidia-cublas-cu11", "11.11.3.6"), ("nvidia-cudnn-cu11", "8.9.4.25"), ("nvidia-cublas-cu12", "12.4.5.8"))
STAND_INS = {"spins": "while True:\n    pass\n", "sleeps": "import time\ntime.sleep(3600)\n"}


def clean_environ(**extra) -> dict:
    environ = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    return {**environ, **extra}


@pytest.fixture(scope="module")
def no_probe_report(tmp_path_factory) -> Path:
    """The dev venv (torch CPU) as `check --no-probe` records it, with 64 OpenMP threads on this machine."""
    path = tmp_path_factory.mktemp("recorded") / "report.json"
    run = run_envdoctor("check", "--no-probe", "--no-save", "--json", str(path), env={"OMP_NUM_THREADS": "64"}, unset=THREAD_VARIABLES)
    assert run.returncode in (0, 1), run
    return path


@pytest.fixture(scope="module")
def clamped_probe() -> dict:
    """A real ladder up to the thread pools under OMP_NUM_THREADS=64: what the libraries really started."""
    result = run_ladder(sys.executable, clean_environ(OMP_NUM_THREADS="64"), ProbeOptions(), until="thread_pools")
    assert not result.failures, result
    return encode(result)


def with_probe(source: Path, destination: Path, probe: dict, change=lambda facts: None) -> Path:
    changed_report(source, destination, change)
    report = json.loads(destination.read_text())
    report["probe"] = probe
    destination.write_text(json.dumps(report))
    return destination


def rechecked_findings(report: Path, only: str, skipped: str = "") -> dict:
    run = run_envdoctor("check", "--from", str(report), "--only", only, "--json", "-")
    assert run.returncode in (0, 1), run
    assert "Traceback" not in run.stderr
    assert_checks_ran(run.json(), only, skipped=skipped)
    return findings_by_id(run.json())


def add_mixed_wheels(facts: dict) -> None:
    for name, version in MIXED_WHEELS:
        facts["target"]["distributions"].append({"name": name, "version": version, "location": "/x", "requires": []})


# One severity per cause, whatever the path: mixed CUDA wheel families can crash another package, so a warning;
# a probe that passed beside them says so


@pytest.mark.slow
def test_mixed_families_beside_a_cpu_torch_whose_probe_passed_are_a_warning(tmp_path, no_probe_report, clamped_probe):
    report = with_probe(no_probe_report, tmp_path / "r.json", clamped_probe, add_mixed_wheels)
    (finding,) = rechecked_findings(report, "wheels")["wheels.mixed-cuda-families"]
    assert finding["severity"] == "warning"
    assert "probe disproved" in finding["explanation"] and "CPU-only" in finding["evidence"]["disproved_by_probe"]
    assert set(finding["evidence"]["families"]) == {"cu11", "cu12"}


def test_mixed_families_beside_a_cpu_torch_without_a_probe_are_the_same_warning(tmp_path, no_probe_report):
    (finding,) = rechecked_findings(changed_report(no_probe_report, tmp_path / "r.json", add_mixed_wheels), "wheels")["wheels.mixed-cuda-families"]
    assert finding["severity"] == "warning" and finding["evidence"]["disproved_by_probe"] is None


@pytest.mark.slow
def test_mixed_families_beside_a_cuda_torch_are_the_same_warning(tmp_path, clamped_probe):
    (finding,) = rechecked_findings(with_probe(H100, tmp_path / "r.json", clamped_probe, add_mixed_wheels), "wheels")["wheels.mixed-cuda-families"]
    assert finding["severity"] == "warning"


# Severity follows the evidence: oversubscribed thread pools


@pytest.mark.slow
def test_oversubscription_the_probe_saw_clamped_says_what_was_measured(tmp_path, no_probe_report, clamped_probe):
    report = with_probe(no_probe_report, tmp_path / "r.json", clamped_probe)
    (finding,) = rechecked_findings(report, "threads")["threads.oversubscribed"]
    cpus = finding["evidence"]["usable_cpus"]
    assert "OMP_NUM_THREADS=64" in finding["title"]
    assert "orders of magnitude" not in finding["explanation"]
    measured = finding["evidence"]["measured_threads"]
    assert measured["torch"] == measured["openmp"] <= cpus
    assert f"torch {measured['torch']}" in finding["explanation"]
    assert finding["severity"] == "info"


def test_oversubscription_without_a_probe_names_the_value_and_says_it_was_not_measured(no_probe_report):
    (finding,) = rechecked_findings(no_probe_report, "threads", skipped="threads.multiple-openmp")["threads.oversubscribed"]  # it reads the probe
    assert "OMP_NUM_THREADS=64" in finding["title"]
    assert "not measured" in finding["explanation"]
    assert finding["severity"] == "warning"


def test_the_offending_value_is_in_the_default_view(no_probe_report):
    run = run_envdoctor("check", "--from", str(no_probe_report), "--only", "threads")
    assert "OMP_NUM_THREADS=64" in run.stdout, run


# Probe time limits


def test_a_probe_timeout_above_the_default_raises_every_stage_limit():
    raised = json.loads(ladder_argv("python", 900, "auto", None)[-1])
    default = json.loads(ladder_argv("python", DEFAULT_TIMEOUT_S, "auto", None)[-1])
    assert default == ladder.limits()
    assert all(raised[stage] >= default[stage] + 900 - DEFAULT_TIMEOUT_S for stage in ladder.IDS)


@pytest.fixture(scope="module", params=sorted(STAND_INS))
def out_of_time(request, tmp_path_factory) -> tuple:
    """A real probe of 4 s into a stand-in numpy on PYTHONPATH that spins or sleeps at import (a slow
    stage and a hung one, for real), with how long it took."""
    behaviour, folder = request.param, tmp_path_factory.mktemp(request.param)
    (folder / "numpy").mkdir()
    (folder / "numpy" / "__init__.py").write_text(STAND_INS[behaviour])
    started = time.monotonic()
    probe = run_probe(sys.executable, clean_environ(PYTHONPATH=str(folder)), ProbeOptions(timeout_s=4))
    return behaviour, probe, time.monotonic() - started


@pytest.mark.slow
def test_a_stage_past_its_limit_is_slow_when_it_kept_using_cpu_and_hung_only_when_not(out_of_time):
    behaviour, result, took = out_of_time
    (stage,) = [s for s in result["stages"] if s["id"] == "import_numpy"]
    assert stage["status"] == ("slow" if behaviour == "spins" else "hung")
    assert stage["crash"]["still_working"] is (behaviour == "spins")
    if behaviour == "spins":
        assert stage["crash"]["cpu_s"] > 1.0
        assert "slow, not hung" in stage["reason"]
    else:
        assert stage["crash"]["cpu_s"] < 1.0
        assert stage["reason"].endswith(": hung")
    assert result["bisection"] is None
    assert took < 4 + 10, took


@pytest.mark.slow
def test_the_time_limit_finding_gives_a_remedy_that_raises_the_limit_for_the_diagnosed_interpreter(tmp_path, no_probe_report, out_of_time):
    behaviour, probe, _ = out_of_time
    probe = {**probe, "python": "/opt/my envs/train/bin/python"}
    (finding,) = rechecked_findings(with_probe(no_probe_report, tmp_path / "r.json", probe), "probe")["probe.hang"]
    commands = [r["command"] for r in finding["remedies"] if r["command"]]
    raise_limit = next(c for c in commands if "--probe-timeout" in c)
    argv = shlex.split(raise_limit)
    assert argv[argv.index("--python") + 1] == "/opt/my envs/train/bin/python"
    assert float(argv[argv.index("--probe-timeout") + 1]) > 4
    assert "not bisected" in finding["explanation"]
    if behaviour == "spins":
        assert "still working" in finding["title"] and "slow, not hung" in finding["title"]
        assert finding["severity"] == "warning"
    else:
        assert "hung" in finding["title"] and "slow" not in finding["title"]
        assert finding["severity"] == "error"
