"""The diagnosed interpreter is started once for the facts `check` reads in it (target/batch.py runs
the facts and conda scripts in that one start), and each script's failure stays its own."""

import stat
import subprocess
import sys

import pytest

from conftest import run_envdoctor
from envdoctor.collect.target import CollectorError, outcome, run_target_scripts
from envdoctor.target import script_source
from helpers.pythons import python_or_skip


def counting_python(folder):
    """An interpreter that logs each start in `folder`/starts, then runs this Python."""
    log = folder / "starts"
    wrapper = folder / "python"
    wrapper.write_text(f"#!/bin/sh\necho start >> '{log}'\nexec '{sys.executable}' \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return wrapper, log


def test_check_without_the_probe_starts_the_diagnosed_interpreter_once_for_its_facts(tmp_path):
    python, log = counting_python(tmp_path)
    run = run_envdoctor("check", "--no-save", "--no-probe", "--python", str(python), "--json", "-")
    assert run.returncode in (0, 1), run
    facts = run.json()["facts"]
    assert facts["target"]["python"]["executable"] == sys.executable
    assert "error" not in facts["target"]["conda"] and "active" in facts["target"]["conda"]
    assert log.read_text().splitlines() == ["start"] * 2  # --python's identity check, then the facts


@pytest.mark.parametrize("minor", ["3.8", "3.13"])
def test_facts_and_conda_facts_come_from_one_start_of_another_python(minor):
    python = python_or_skip(minor)
    (facts, conda), _ = run_target_scripts(python, ("facts", "conda"))
    assert facts["python"]["version"].startswith(minor + ".")
    assert conda["prefix"] is None


def test_a_script_that_fails_keeps_its_failure_and_leaves_the_next_its_output():
    sources = ["raise ValueError('no such record')", "import sys; sys.exit(3)", "import sys; sys.stdout.write('{\"n\": 1}')"]
    completed = subprocess.run([sys.executable, "-c", script_source("batch"), *sources], capture_output=True, text=True, check=True)
    records = completed.stdout.split("\0")
    assert records[-1] == ""
    outcomes = [outcome(name, "py", record) for name, record in zip(("a", "b", "c"), records)]
    assert [str(o) for o in outcomes[:2]] == ["a under py ValueError: no such record", "b under py exited with status 3"]
    assert outcomes[2] == {"n": 1}


def test_an_interpreter_that_does_not_run_them_fails_each_script_with_its_end():
    failed, said = run_target_scripts("/bin/false", ("facts", "conda"))
    assert all(isinstance(f, CollectorError) for f in failed)
    assert [str(f) for f in failed] == ["facts under /bin/false exited with 1", "conda under /bin/false exited with 1"] and said == ""
