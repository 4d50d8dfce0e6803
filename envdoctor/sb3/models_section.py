"""facts["models"]: the static forensics of each model, and what the target interpreter offers them.

The target side is one stdlib-only child process (target/sb3_target.py) under the diagnosed
interpreter: its Python version and opcodes, whether each module the models import can be found
there (without importing it), and the versions of the SB3 stack. The checks judge the two together.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterable, List, Set

from envdoctor.collect.target import CollectorError, run_target_script
from envdoctor.sb3.pickle_file import inspect_file


def target_facts(python: str, modules: Iterable[str]) -> Dict[str, Any]:
    try:
        return run_target_script(python, "sb3_target", json.dumps(sorted(set(modules))))
    except CollectorError as error:
        return {"error": str(error)}


def models_facts(python: str, paths: Iterable[Path]) -> Dict[str, Any]:
    """{"files": [forensics per model], "target": {...}} for the `models` fact section: SB3 archives, and
    the other pickle and torch files (sb3/pickle_file.py); a file neither reader can judge is left out."""
    files = [f for f in (inspect_file(Path(p)) for p in paths) if f is not None]
    modules = {m for f in files for e in f["entries"] for m in e["modules"]}
    return {"files": files, "target": target_facts(python, modules) if needs_target(files, modules) else {}}


def needs_target(files: List[Dict[str, Any]], modules: Set[str]) -> bool:
    """Whether any check has something to judge against the target: an SB3 archive (its versions), a
    module to find, or pickled code to run there. A pickle file of plain data has none, and the run it
    was opened by is spared starting the target interpreter."""
    return bool(modules) or any("kind" not in f or any(e["functions"] for e in f["entries"]) for f in files)
