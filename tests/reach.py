"""Helpers for the tests of where envdoctor runs: other Pythons, the zipapp, hosts without /proc."""

from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

from conftest import Run

OLDEST, NEWEST = "3.8", "3.13"


def interpreter(version: str) -> str:
    """CPython `version` from pyenv or PATH; the test is skipped on a machine without it."""
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        for folder in sorted(Path(root, "versions").glob(f"{version}.*"), reverse=True):
            if (folder / "bin" / "python").is_file():
                return str(folder / "bin" / "python")
    found = shutil.which(f"python{version}")
    if found is None:
        pytest.skip(f"no Python {version} on this machine (pyenv install {version})")
    return found


def venv(python: str, target: Path, with_pip: bool = False) -> Path:
    """A plain virtual environment of `python` (nothing installed) and its interpreter."""
    subprocess.run([python, "-m", "venv", *(() if with_pip else ("--without-pip",)), str(target)], check=True)
    return target / "bin" / "python"


def site_packages(python: Path) -> Path:
    found = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True, text=True, check=True)
    return Path(found.stdout.strip())


def run_python(python, *args: str, cwd: Path, env: Optional[Dict[str, str]] = None, timeout: float = 300) -> Run:
    """`python ARGS` as a child process, with colour off and the extra variables `env`."""
    environ = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return Run(subprocess.run([str(python), *args], capture_output=True, text=True, cwd=cwd, env=environ, timeout=timeout))


def model_zip(path: Path, saved_with: str) -> Path:
    """A small SB3 model file as SB3 writes it: JSON `data` with a pickled entry, version and system info."""
    learning_rate = {":type:": "<class 'float'>", ":serialized:": base64.b64encode(pickle.dumps(0.0003, protocol=4)).decode()}
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps({"gamma": 0.99, "learning_rate": learning_rate}, indent=4))
        archive.writestr("_stable_baselines3_version", "2.3.2")
        archive.writestr("system_info.txt", f"- Python: {saved_with}\n")
    return path


def one_line_error(run: Run) -> str:
    """The refusal's single stderr line, once exit code 2 and the absence of a traceback are asserted."""
    assert run.returncode == 2, run
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envdoctor: error:") and "Traceback" not in run.stderr, run
    return lines[0]


def breakages() -> List[Tuple[str, Callable[[dict], Any]]]:
    """(name, break) pairs: each `break(report)` returns the recorded report broken in one way a reader must refuse."""
    cases: List[Tuple[str, Callable[[dict], Any]]] = [
        (f"without-{key}", lambda report, key=key: {k: v for k, v in report.items() if k != key})
        for key in ("tool", "facts", "findings", "checks", "target_python")
    ]
    cases += [
        (f"{key}-as-{type(wrong).__name__}", lambda report, key=key, wrong=wrong: {**report, key: wrong})
        for key, wrong in (("facts", []), ("findings", {}), ("checks", "all"), ("tool", 7), ("findings", True))
    ]
    return cases + [("not-an-object", lambda report: [report]), ("other-schema-major", lambda report: {**report, "schema_version": "9.0"})]
