"""The facts a fix plans from: the usual collectors, only the sections the fix reads, plus the
interpreters and conda on this machine (the way out when the target's Python has no fitting torch).
"""

from __future__ import annotations

import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from envdoctor.collect import COLLECTORS, CollectContext, timed
from envdoctor.fix import FixError
from envdoctor.proc.children import NO_BYTECODE, run_child

MINORS = [f"3.{n}" for n in range(7, 16)]
VERSION_PROBE = "import sys; print('%d.%d' % sys.version_info[:2])"


def candidate_paths(environ: Mapping[str, str]) -> List[str]:
    """python3.N on PATH and in pyenv's versions folder, each real file once."""
    found = [shutil.which(f"python{minor}", path=environ.get("PATH")) for minor in MINORS]
    pyenv = Path(environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if pyenv.is_dir():
        found += [str(p) for p in sorted(pyenv.glob("*/bin/python3.*")) if re.fullmatch(r"python3\.\d+", p.name)]
    unique: Dict[str, str] = {}
    for path in filter(None, found):
        unique.setdefault(os.path.realpath(path), path)
    return list(unique.values())


def interpreter_minor(path: str) -> Optional[str]:
    """Ask the interpreter itself: a PATH entry may be a shim for a version that is not installed."""
    result = run_child([path, NO_BYTECODE, "-c", VERSION_PROBE], timeout=15)
    return result.stdout.strip() if result.ok else None


def collect_pythons(ctx) -> dict:
    paths = candidate_paths(ctx.environ)
    with ThreadPoolExecutor(max_workers=4) as pool:
        minors = list(pool.map(interpreter_minor, paths))
    conda = ctx.environ.get("CONDA_EXE") or shutil.which("conda", path=ctx.environ.get("PATH"))
    return {"interpreters": [{"minor": m, "path": p} for p, m in zip(paths, minors) if m], "conda": conda}


def gather(python: str, sections: Sequence[str], environ: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """Run the collectors of `sections` (and `pythons`) concurrently for `python`."""
    ctx = CollectContext(python=python, environ=dict(os.environ if environ is None else environ))
    collectors = {name: COLLECTORS[name] for name in sections if name in COLLECTORS}
    if "pythons" in sections:
        collectors["pythons"] = collect_pythons
    with ThreadPoolExecutor(max_workers=len(collectors) or 1) as pool:
        futures = {name: pool.submit(timed, collector, ctx) for name, collector in collectors.items()}
        facts = {name: future.result()[0] for name, future in futures.items()}
    if "error" in facts.get("target", {}):
        raise FixError(f"cannot read the environment of {python}: {facts['target']['error']}")
    return facts
