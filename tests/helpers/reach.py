"""Helpers for the tests of where envdoctor runs: other Pythons (helpers/pythons.py finds them), the zipapp."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from conftest import Run

OLDEST, NEWEST = "3.8", "3.13"


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
