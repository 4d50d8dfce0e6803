"""Other CPythons on this machine, by minor version ("3.8", "3.13"): from pyenv, else from PATH."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from typing import Optional

import pytest


def find_python(minor: str) -> Optional[str]:
    """The newest CPython `minor` pyenv holds (its bin/pythonMINOR), else `pythonMINOR` on PATH; None when neither has it."""
    root = os.environ.get("PYENV_ROOT")
    pyenv = shutil.which("pyenv")
    if not root and pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
    found = sorted(glob.glob(f"{root or os.path.expanduser('~/.pyenv')}/versions/{minor}.*/bin/python{minor}"))
    return found[-1] if found else shutil.which(f"python{minor}")


def needed_python(minor: str) -> str:
    """CPython `minor`, which the test cannot do without: it fails on a machine without it."""
    found = find_python(minor)
    if found is None:
        pytest.fail(f"no Python {minor} in pyenv or on PATH; these tests need it (pyenv install {minor})")
    return found


def python_or_skip(minor: str) -> str:
    """CPython `minor`; the test is skipped on a machine without it."""
    found = find_python(minor)
    if found is None:
        pytest.skip(f"no Python {minor} on this machine (pyenv install {minor})")
    return found
