"""The floors of CONTRIBUTING.md hold: `lint-imports` keeps every contract in .importlinter, and a
contract does break when a floor imports one above it."""

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def linted(root: Path) -> subprocess.CompletedProcess:
    """lint-imports on the envdoctor package in `root`, with the contracts of this checkout."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(REPO / ".importlinter"), "--no-cache"],
        cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120,
    )


def test_every_contract_is_kept():
    run = linted(REPO)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def linted_with(folder: Path, module: str, added: str) -> subprocess.CompletedProcess:
    """The contracts checked on a copy of the package in `folder` whose `module` ends with `added`."""
    shutil.copytree(REPO / "envdoctor", folder / "envdoctor", ignore=shutil.ignore_patterns("__pycache__"))
    with open(folder / "envdoctor" / module, "a", encoding="utf-8") as stream:
        stream.write(added)
    return linted(folder)


def test_a_check_that_imports_the_command_line_breaks_the_floors(tmp_path):
    run = linted_with(tmp_path, "checks/cpu.py", "\nfrom envdoctor.cli import check as _upward  # noqa\n")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Nothing below the command line imports it BROKEN" in run.stdout
    assert "envdoctor.checks.cpu -> envdoctor.cli" in run.stdout


def test_a_check_that_reads_the_run_supervisor_breaks_the_pure_floor(tmp_path):
    run = linted_with(tmp_path, "facts/run_growth.py", "\ndef _sideways():\n    from envdoctor.capture import supervise  # noqa\n")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "The checks and the fact views are pure" in run.stdout
    assert "envdoctor.facts.run_growth -> envdoctor.capture.supervise" in run.stdout


def test_every_top_level_module_has_its_floor():
    """A new package or module joins the layers contract, so no import knot can grow outside it."""
    config = configparser.ConfigParser()
    config.read(REPO / ".importlinter")
    layered = set(re.findall(r"envdoctor\.(\w+)", config["importlinter:contract:layers"]["layers"]))
    package = REPO / "envdoctor"
    modules = {p.stem for p in package.glob("*.py")} | {p.parent.name for p in package.glob("*/__init__.py")}
    assert modules - {"__init__", "__main__"} - layered == set()


def test_loading_every_check_loads_no_process_or_feature_code():
    """The checks are pure: in a fresh interpreter, loading all of them imports neither the run
    supervisor, gdb support, the PNG encoder nor psutil (the contracts see imports; this sees what runs)."""
    script = (
        "import sys\n"
        "from envdoctor.checks.registry import load_checks\n"
        "checks, failures = load_checks()\n"
        "assert len(checks) > 50 and not failures, (len(checks), failures)\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    loaded = set(run.stdout.split())
    assert "envdoctor.checks.run" in loaded and "envdoctor.facts.run_growth" in loaded
    unwanted = ("envdoctor.capture", "envdoctor.capture.supervise", "envdoctor.capture.gdb", "envdoctor.capture.png", "psutil", "envdoctor.proc", "envdoctor.sb3", "envdoctor.render")
    assert [name for name in unwanted if name in loaded] == []
