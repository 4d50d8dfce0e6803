"""Third-party checks load from the `envdoctor.checks` entry-point group of a real installed package."""

import json
import shutil
import site
import subprocess
import sys
import venv

import pytest

from conftest import REPO, findings_by_id, pip


@pytest.fixture(scope="session")
def plugin_venv(tmp_path_factory):
    """A throwaway venv that sees envdoctor's environment and has the demo plugin really installed."""
    target = tmp_path_factory.mktemp("plugin") / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True).stdout.strip()
    with open(f"{purelib}/envdoctor-dev.pth", "w") as stream:
        stream.write("\n".join([str(REPO), *site.getsitepackages()]) + "\n")
    source = shutil.copytree(REPO / "tests" / "data" / "plugin", target.parent / "plugin-source")  # builds write beside the source
    pip(["install", "-q", "--no-deps", "--no-build-isolation", str(source)], python)
    return python


def run_in(python, *args):
    return subprocess.run([str(python), "-m", "envdoctor", *args], capture_output=True, text=True, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})


@pytest.mark.slow
def test_a_plugin_check_runs_and_its_findings_are_reported(plugin_venv):
    run = run_in(plugin_venv, "check", "--no-save", "--only", "lab", "--json", "-")
    assert run.returncode == 0, run.stderr
    found = findings_by_id(json.loads(run.stdout))
    (finding,) = found["lab.python-version"]
    assert finding["title"] == f"Python {sys.version.split()[0]} seen by the lab plugin"


@pytest.mark.slow
def test_a_crashing_plugin_check_is_a_visible_finding_not_a_crash(plugin_venv):
    run = run_in(plugin_venv, "check", "--no-save", "--only", "lab", "--json", "-")
    report = json.loads(run.stdout)
    (crash,) = findings_by_id(report)["doctor.check-crashed"]
    assert crash["evidence"]["check"] == "lab.always-crashes"
    assert "RuntimeError: bug in the lab plugin" in crash["explanation"]
    assert {"id": "lab.always-crashes", "status": "crashed"}.items() <= next(c for c in report["checks"] if c["id"] == "lab.always-crashes").items()


@pytest.mark.slow
def test_a_plugin_that_fails_to_load_is_named(plugin_venv):
    report = json.loads(run_in(plugin_venv, "check", "--no-save", "--only", "lab", "--json", "-").stdout)
    (failure,) = findings_by_id(report)["doctor.plugin-failed"]
    assert "'broken'" in failure["title"]
    assert "envdoctor_missing_dependency" in failure["explanation"]


@pytest.mark.slow
def test_plugin_checks_appear_in_the_catalogue(plugin_venv):
    run = run_in(plugin_venv, "checks")
    assert "lab.python-version" in run.stdout
    assert "plugin 'broken' failed to load" in run.stderr


def test_plugins_are_looked_for_in_entry_points_files_before_importlib_metadata(tmp_path, monkeypatch):
    """Without a declaration, check never imports importlib.metadata; a declaration, a zip or an egg on
    sys.path sends the search on to it."""
    from envdoctor.checks import registry

    folder = tmp_path / "site"
    (folder / "other-1.0.dist-info").mkdir(parents=True)
    (folder / "other-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n")
    monkeypatch.setattr(sys, "path", [str(folder), str(tmp_path / "missing")])
    assert not registry.may_declare_plugins()
    (folder / "lab-1.0.dist-info").mkdir()
    (folder / "lab-1.0.dist-info" / "entry_points.txt").write_text("[envdoctor.checks]\nlab = lab.checks\n")
    assert registry.may_declare_plugins()
    for odd in ("bundle.zip", "old-1.0.egg"):
        (tmp_path / odd).write_bytes(b"")
        monkeypatch.setattr(sys, "path", [str(tmp_path / odd)])
        assert registry.may_declare_plugins(), odd


def test_check_without_plugins_does_not_import_importlib_metadata(tmp_path):
    program = "import sys\nfrom envdoctor.cli import main\ntry:\n    main(['check', '--no-probe', '--no-save', '--only', 'cpu'])\nexcept SystemExit:\n    pass\nprint('importlib.metadata' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=tmp_path, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})
    assert run.stdout.splitlines()[-1] == "False", run
