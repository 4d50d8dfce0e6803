"""envdoctor installs (non-editable, with the dependency versions resolved for that Python) and runs
on the oldest and the newest supported CPython: `check`, `inspect`, `run`, and refusing a broken report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO
from helpers.model_files import model_saved_with
from helpers.pythons import python_or_skip
from helpers.reach import NEWEST, OLDEST, breakages, run_python
from helpers.refusals import one_line_error

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("oldest-and-newest-pythons")]  # its expensive fixtures are built once, on one worker


def installed(venvs, version: str) -> Path:
    """The console script of a venv of Python `version` with envdoctor built from the repository and installed
    with the dependency versions resolved for that Python; one venv per version, shared by the tests."""
    python = venvs.get(f"envdoctor-{version}", ["--reinstall-package", "envdoctor", str(REPO)], interpreter=python_or_skip(version))
    return python.with_name("envdoctor")


@pytest.fixture(scope="session", params=[OLDEST, NEWEST])
def envdoctor_of(request, venvs):
    """(Python version, the envdoctor console script installed under it)."""
    return request.param, installed(venvs, request.param)


@pytest.fixture(scope="session")
def oldest(venvs) -> Path:
    return installed(venvs, OLDEST)


@pytest.fixture(scope="session")
def recorded(oldest, tmp_path_factory) -> dict:
    """A report written under the oldest Python, to be broken and read back there (with jsonschema)."""
    return run_python(oldest, "check", "--no-probe", "--json", "-", "--no-save", cwd=tmp_path_factory.mktemp("recorded")).json()


def test_check_runs_and_reports_its_python(envdoctor_of, tmp_path):
    version, envdoctor = envdoctor_of
    run = run_python(envdoctor.with_name("python"), "-m", "envdoctor", "check", "--json", "-", cwd=tmp_path)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run
    report = run.json()
    assert report["facts"]["target"]["python"]["version"].startswith(version + ".")
    assert report["target_python"] == str(envdoctor.with_name("python"))
    assert [stage["status"] for stage in report["probe"]["stages"]][:1] == ["passed"]
    assert list((tmp_path / "reports").glob("*.json"))  # saved as the report it printed


def test_inspect_and_run_through_the_console_script(envdoctor_of, tmp_path):
    version, envdoctor = envdoctor_of
    model = model_saved_with(tmp_path / "model.zip", saved_with=f"{version}.0")
    inspected = run_python(envdoctor, "inspect", str(model), "--json", "-", cwd=tmp_path)
    assert inspected.returncode == 0, inspected
    assert [entry["key"] for entry in inspected.json()["facts"]["models"]["files"][0]["entries"]] == ["learning_rate"]
    ran = run_python(envdoctor, "run", "--", str(envdoctor.with_name("python")), "-c", "import sys; print(sys.version_info[:2]); sys.exit(3)", cwd=tmp_path)
    assert ran.returncode == 3 and str(tuple(int(p) for p in version.split("."))) in ran.stdout, ran


@pytest.mark.parametrize("name,breaking", breakages(), ids=[name for name, _ in breakages()])
def test_the_oldest_python_refuses_a_broken_report_in_one_line(oldest, recorded, tmp_path, name, breaking):
    reports = tmp_path / "reports"
    path = tmp_path / "report.json"
    path.write_text(json.dumps(breaking(recorded)))
    line = one_line_error(run_python(oldest, "check", "--from", str(path), cwd=tmp_path))
    assert str(path) in line and not reports.exists()
