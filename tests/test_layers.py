"""The floors of CONTRIBUTING.md hold: `lint-imports` keeps every contract in .importlinter, and a
contract does break when a floor imports one above it."""

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


def test_a_check_that_imports_the_command_line_breaks_the_floors(tmp_path):
    shutil.copytree(REPO / "envdoctor", tmp_path / "envdoctor", ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "envdoctor" / "checks" / "cpu.py", "a", encoding="utf-8") as module:
        module.write("\nfrom envdoctor.cli import check as _upward  # noqa\n")
    run = linted(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Nothing below the command line imports it BROKEN" in run.stdout
    assert "envdoctor.checks.cpu -> envdoctor.cli" in run.stdout
