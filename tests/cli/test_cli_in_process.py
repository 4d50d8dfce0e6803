"""The tests' in-process run of the CLI gives what a real `python -m envdoctor` gives: exit code, stdout
and stderr, byte for byte, for help, usage errors, reports judged in every format and the other commands."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import TEST_DATA, run_envdoctor
from envdoctor import engine

REPORTS = TEST_DATA / "reports"
SEED = TEST_DATA / "fix" / "seed-py38-torch231-cu121.json"

INVOCATIONS = {
    "help": (["--help"], {}),
    "help-at-columns": (["check", "--help"], {"COLUMNS": "132"}),
    "version": (["--version"], {}),
    "unknown-command": (["nosuch"], {}),
    "bad-option-value": (["check", "--fail-on", "fatal"], {}),
    "unreadable-report": (["check", "--from", "missing.json"], {}),
    "checks": (["checks"], {}),
    "check-from-terminal": (["check", "--from", str(REPORTS / "h100-cu130.json"), "--fail-on", "info"], {}),
    "check-from-markdown": (["check", "--from", str(REPORTS / "v100-old-driver.json"), "--markdown", "-"], {}),
    "diff": (["diff", str(REPORTS / "h100-cu130.json"), str(REPORTS / "v100-old-driver.json"), "-v"], {}),
    "fleet": (["fleet", "--reports", str(REPORTS)], {}),
    "fix-plan": (["fix", "--pin-cuda", "11.6", "--from", str(SEED), "--format", "sh"], {}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(INVOCATIONS))
def test_in_process_and_child_runs_agree(tmp_path, name):
    args, env = INVOCATIONS[name]
    here = run_envdoctor(*args, env=env, cwd=tmp_path)
    child = run_envdoctor(*args, env=env, cwd=tmp_path, child=True)
    assert (here.returncode, here.stdout, here.stderr) == (child.returncode, child.stdout, child.stderr)
    assert here.stdout or here.stderr


def test_in_process_runs_leave_the_environment_working_directory_and_streams_as_they_were(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVDOCTOR_TEST_KEPT", "1")
    before = (dict(os.environ), Path.cwd(), sys.stdout)
    run = run_envdoctor("check", "--from", "missing.json", env={"ENVDOCTOR_TEST_ADDED": "1"}, unset=("ENVDOCTOR_TEST_KEPT",), cwd=tmp_path)
    assert run.returncode == 2 and "cannot read missing.json" in run.stderr
    assert (dict(os.environ), Path.cwd(), sys.stdout) == before


def test_start_up_variables_and_the_run_command_need_a_child():
    with pytest.raises(TypeError, match="PYTHONPATH act at interpreter start-up"):
        run_envdoctor("checks", env={"PYTHONPATH": "/nowhere"})
    with pytest.raises(TypeError, match="child=True"):
        run_envdoctor("run", "--", "true")


def test_an_in_process_run_past_its_time_limit_ends_as_a_child_would(monkeypatch):
    monkeypatch.setattr(engine, "read_report", lambda path: time.sleep(30))
    with pytest.raises(subprocess.TimeoutExpired):
        run_envdoctor("check", "--from", "r.json", timeout=0.5)
    assert run_envdoctor("checks", timeout=60).returncode == 0  # the limit is gone with the run
