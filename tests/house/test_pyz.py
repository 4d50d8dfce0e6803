"""envdoctor.pyz: one file that runs `check`, `inspect` and `run` under the oldest and newest Python in
environments with nothing installed, and that a broken `rich` or `click` in the diagnosed environment
cannot reach (the archive restarts its interpreter with -I -S)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, built_once, write_host_root
from helpers.model_files import model_saved_with
from helpers.pythons import python_or_skip
from helpers.reach import NEWEST, OLDEST, breakages, run_python, site_packages, venv
from helpers.refusals import one_line_error

pytestmark = pytest.mark.slow
SHADOWED = ("rich", "click", "packaging")


def build_pyz(folder: Path) -> None:
    built = subprocess.run([sys.executable, str(REPO / "scripts" / "build-pyz"), "--output", str(folder / "envdoctor.pyz")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr


@pytest.fixture(scope="session")
def pyz(tmp_path_factory) -> Path:
    """The zipapp, built once per test run by scripts/build-pyz (its dependencies fetched by pip)."""
    return built_once(tmp_path_factory, "pyz", build_pyz) / "envdoctor.pyz"


@pytest.fixture(scope="session", params=[OLDEST, NEWEST])
def bare(request, tmp_path_factory) -> Path:
    """A venv of the oldest or newest Python with nothing installed, not even pip."""
    return venv(python_or_skip(request.param), tmp_path_factory.mktemp(f"bare{request.param}") / "env")


@pytest.fixture(scope="session")
def shadowed(tmp_path_factory) -> Path:
    """A venv whose site-packages holds a `rich`, `click` and `packaging` that end any process importing them."""
    python = venv(python_or_skip(OLDEST), tmp_path_factory.mktemp("shadowed") / "env")
    site = site_packages(python)
    for name in SHADOWED:
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(f"raise SystemExit('the diagnosed environment\\'s {name} was imported')\n")
    return python


def checked(pyz: Path, python: Path, cwd: Path) -> dict:
    run = run_python(python, str(pyz), "check", "--json", "-", "--no-save", cwd=cwd)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run
    return run.json()


def target_version(report: dict) -> str:
    return report["facts"]["target"]["python"]["version"]


def test_check_diagnoses_the_interpreter_that_runs_the_file(pyz, bare, tmp_path):
    report = checked(pyz, bare, tmp_path)
    wanted = subprocess.run([str(bare), "-c", "import platform; print(platform.python_version())"], capture_output=True, text=True).stdout.strip()
    assert report["target_python"] == str(bare) and target_version(report) == wanted
    assert report["probe"]["stages"][0]["status"] == "passed"  # the ladder ran, watched without psutil
    assert not list(tmp_path.iterdir())  # --no-save: nothing written


def test_inspect_reads_a_model_statically(pyz, bare, tmp_path):
    model = model_saved_with(tmp_path / "model.zip", saved_with="3.8.18")
    run = run_python(bare, str(pyz), "inspect", str(model), "--json", "-", cwd=tmp_path)
    assert run.returncode == 0, run
    model_facts = run.json()["facts"]["models"]["files"][0]
    assert model_facts["system_info"] == {"python": "3.8.18"} and [e["key"] for e in model_facts["entries"]] == ["learning_rate"]


def test_run_passes_output_and_exit_status_through(pyz, bare, tmp_path):
    run = run_python(bare, str(pyz), "run", "--report-dir", str(tmp_path / "reports"), "--", str(bare), "-c", "print('trained'); raise SystemExit(3)", cwd=tmp_path)
    assert run.returncode == 3 and "trained" in run.stdout and "Traceback" not in run.stderr, run
    assert list((tmp_path / "reports").glob("*.json"))


def test_a_broken_rich_click_or_packaging_in_the_environment_never_reaches_the_doctor(pyz, shadowed, tmp_path):
    report = checked(pyz, shadowed, tmp_path)
    assert target_version(report).startswith(OLDEST + ".")
    model = model_saved_with(tmp_path / "model.zip", saved_with="3.8.18")
    run = run_python(shadowed, str(pyz), "inspect", str(model), cwd=tmp_path)
    assert run.returncode == 0 and "was imported" not in run.stderr + run.stdout, run


def test_the_nvml_child_imports_pynvml_from_the_archive(pyz, bare, tmp_path):
    """The NVML query runs isolated and without site (-I -S); told where this process found pynvml,
    it imports it from inside the archive and reaches NVML itself (here: no driver library)."""
    ask = f"import sys; sys.path.insert(0, {str(pyz)!r}); from envdoctor.collect import gpu; print(gpu.pynvml_folder()); print(gpu.query_nvml())"
    run = run_python(bare, "-c", ask, cwd=tmp_path)
    folder, answer = run.stdout.splitlines()
    assert folder == str(pyz), run
    assert "NVMLError" in answer or "'source': 'nvml'" in answer, run


def test_run_samples_gpu_memory_through_nvml_from_the_archive(pyz, bare, tmp_path):
    """`run`'s GPU reader, an isolated child like the query, finds pynvml in the archive too: here, with a
    device node presented and no driver library, NVML itself says why it cannot answer."""
    root = write_host_root(tmp_path / "root", {"/dev/nvidiactl": ""})
    run = run_python(bare, str(pyz), "run", "--always-report", "--report-dir", str(tmp_path / "reports"), "--", str(bare), "-c", "import time; time.sleep(1)", cwd=tmp_path, env={"ENVDOCTOR_ROOT": str(root)})  # long enough for the reader to answer
    assert run.returncode == 0, run
    report = json.loads(next((tmp_path / "reports").glob("*.json")).read_text())
    assert any(p.startswith("nvml: NVMLError") for p in report["run"]["gpu"]["problems"]), report["run"]["gpu"]


@pytest.fixture(scope="session")
def recorded(pyz, tmp_path_factory) -> dict:
    """A report the zipapp wrote, to be read back by the zipapp (which has no jsonschema)."""
    return checked(pyz, Path(python_or_skip(OLDEST)), tmp_path_factory.mktemp("recorded"))


def test_a_report_reads_back_without_jsonschema(pyz, recorded, tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(recorded))
    run = run_python(python_or_skip(OLDEST), str(pyz), "check", "--from", str(path), "--json", "-", "--no-save", cwd=tmp_path)
    assert run.returncode == 0 and run.json()["facts"] == recorded["facts"], run


@pytest.mark.parametrize("name,breaking", breakages(), ids=[name for name, _ in breakages()])
def test_a_broken_report_is_refused_by_the_structural_check(pyz, recorded, tmp_path, name, breaking):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(breaking(recorded)))
    line = one_line_error(run_python(python_or_skip(OLDEST), str(pyz), "check", "--from", str(path), "--no-save", cwd=tmp_path))
    assert str(path) in line
    assert list(tmp_path.iterdir()) == [path]


def test_building_on_a_python_older_than_3_11_says_what_it_needs_in_one_line():
    built = subprocess.run([python_or_skip(OLDEST), str(REPO / "scripts" / "build-pyz")], capture_output=True, text=True)
    assert built.returncode == 2 and built.stdout == ""
    assert built.stderr.count("\n") == 1 and built.stderr.startswith("build-pyz: building needs Python 3.11 or newer"), built.stderr
