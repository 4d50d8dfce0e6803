"""Installs that did not finish, as they lie on disk: a real venv with a real wheel installed by uv,
then what an interrupted upgrade or uninstall leaves (a second version's metadata folder; pip's `~`
renames of the package and its metadata), judged through `check --python`."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import run_envdoctor
from helpers.local_wheels import write_wheel


@pytest.fixture
def venv(tmp_path) -> Path:
    """A venv holding rl-kit 1.0, installed from its wheel by uv."""
    subprocess.run([str(Path(sys.executable).parent / "uv"), "venv", "--quiet", "--python", sys.executable, str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    wheel = write_wheel(tmp_path / "wheels", "rl-kit", "1.0")
    subprocess.run([str(Path(sys.executable).parent / "uv"), "pip", "install", "--quiet", "--python", str(python), str(wheel)], check=True)
    return python


def site_packages(python: Path) -> Path:
    (folder,) = python.parent.parent.glob("lib/python3*/site-packages")
    return folder


def judged(python: Path, cwd: Path, *more: str) -> dict:
    run = run_envdoctor("check", "--no-probe", "--no-save", "--python", str(python), "--json", "-", *more, cwd=cwd)
    assert run.returncode in (0, 1), run
    return run.json()


def findings(report: dict, check_id: str) -> list:
    return [f for f in report["findings"] if f["id"] == check_id]


def pip_list(python: Path) -> dict:
    """What pip itself says is installed there."""
    listed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "list", "--format", "json"], check=True, capture_output=True, text=True)
    return {d["name"]: d["version"] for d in json.loads(listed.stdout)}


def test_a_second_metadata_folder_of_one_name_is_an_install_twice_with_both_versions(venv, tmp_path):
    newer = write_wheel(tmp_path / "wheels", "rl-kit", "2.0")
    with zipfile.ZipFile(newer) as wheel:  # an upgrade interrupted after it wrote the new metadata
        wheel.extractall(site_packages(venv), [m for m in wheel.namelist() if m.startswith("rl_kit-2.0.dist-info/")])
    report = judged(venv, tmp_path)
    [twice] = findings(report, "requirements.installed-twice")
    assert twice["severity"] == "warning" and sorted(twice["evidence"]["versions"]) == ["1.0", "2.0"], twice
    assert sorted(twice["evidence"]["metadata"]) == ["rl_kit-1.0.dist-info", "rl_kit-2.0.dist-info"]
    command = twice["remedies"][0]["command"]
    assert command.count("uninstall") == 2 and command.endswith("install rl-kit==2.0"), command
    assert not findings(report, "requirements.pip-leftovers")


def test_one_metadata_folder_per_name_is_no_finding(venv, tmp_path):
    report = judged(venv, tmp_path)
    assert {"requirements.installed-twice", "requirements.pip-leftovers"}.isdisjoint(f["id"] for f in report["findings"])
    assert {d["name"]: d["version"] for d in report["facts"]["target"]["distributions"]}["rl-kit"] == "1.0"


def test_pips_leftovers_of_an_interrupted_uninstall_are_not_an_install_and_are_named(venv, tmp_path):
    folder = site_packages(venv)
    for name in ("rl_kit", "rl_kit-1.0.dist-info"):  # what pip's stash does to each path it removes: ~ for the first letter
        (folder / name).rename(folder / ("~" + name[1:]))
    assert "rl-kit" not in pip_list(venv)
    report = judged(venv, tmp_path)
    assert "rl-kit" not in {d["name"] for d in report["facts"]["target"]["distributions"]}
    [left] = findings(report, "requirements.pip-leftovers")
    assert left["severity"] == "warning" and left["evidence"]["not_installed"] == ["rl-kit"], left
    assert sorted(e["entry"] for e in left["evidence"]["leftovers"]) == ["~l_kit", "~l_kit-1.0.dist-info"]
    removal, install = left["remedies"]
    assert install["command"].endswith("install rl-kit")
    subprocess.run(removal["command"], shell=True, check=True)  # the remedy, as the user pastes it
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("~")) == []
    assert not findings(judged(venv, tmp_path), "requirements.pip-leftovers")


def test_leftovers_beside_the_reinstalled_distribution_are_only_noted(venv, tmp_path):
    folder = site_packages(venv)
    (folder / "~l_kit-0.9.dist-info").mkdir()
    (folder / "~l_kit-0.9.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: rl-kit\nVersion: 0.9\n")
    report = judged(venv, tmp_path)
    [left] = findings(report, "requirements.pip-leftovers")
    assert left["severity"] == "info" and left["evidence"]["not_installed"] == [], left
    assert {d["name"]: d["version"] for d in report["facts"]["target"]["distributions"]}["rl-kit"] == "1.0"


def test_the_import_check_does_not_take_a_leftover_for_the_installed_distribution(venv, tmp_path):
    """importlib.metadata lists a `~` metadata folder too, in the file system's order."""
    folder = site_packages(venv)
    (folder / "~l_kit-0.9.dist-info").mkdir()
    (folder / "~l_kit-0.9.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: rl-kit\nVersion: 0.9\n")
    (folder / "~l_kit-0.9.dist-info" / "RECORD").write_text("~l_kit/__init__.py,,\n")
    report = judged(venv, tmp_path, "--imports")
    assert [(m["distribution"], m["version"]) for m in report["facts"]["imports"]["modules"]] == [("rl-kit", "1.0")]


def test_a_pth_file_that_fails_at_start_up_is_named_with_its_line_and_error_and_its_removal_ends_it(venv, tmp_path):
    """An editable install whose project folder was deleted leaves the .pth that imports its finder."""
    pth = site_packages(venv) / "__editable__.gone-1.0.pth"
    pth.write_text(f"{site_packages(venv)}/no-such-folder\nimport __editable___gone_1_0_finder; __editable___gone_1_0_finder.install()\n")
    started = subprocess.run([str(venv), "-c", "pass"], capture_output=True, text=True, check=True)
    assert "Error processing line 2" in started.stderr  # what every start of that Python prints
    [failing] = findings(judged(venv, tmp_path), "requirements.pth-error")
    assert failing["evidence"] == {"pth": str(pth), "line": 2, "error": "ModuleNotFoundError: No module named '__editable___gone_1_0_finder'"}
    subprocess.run(failing["remedies"][0]["command"], shell=True, check=True)
    assert not pth.exists() and not findings(judged(venv, tmp_path), "requirements.pth-error")
