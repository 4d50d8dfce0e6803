"""What the command's Python processes said about themselves through the audit hook (target/audit.py):
the interpreter and environment the program really ran with, and the model files it opened.

argv alone misses both: `bash train.sh` activates a venv and sets variables before `python` starts,
and a model path is often read from a config file. The hook is installed as `sitecustomize` from a
private folder put first on PYTHONPATH; it loads the user's own `sitecustomize` after itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from envdoctor.collect.environ import relevant_variables
from envdoctor.errors import EnvdoctorError
from envdoctor.facts.run import SHADOWING_KEYS
from envdoctor.files import read_regular
from envdoctor.redact import REDACTED
from envdoctor.sb3.archive import open_zip
from envdoctor.target import script_source

LOG_VARIABLE = "ENVDOCTOR_AUDIT_LOG"
VARIATION_VARIABLE = "ENVDOCTOR_VARIATION"  # the change bisection makes again in each Python process
LOG_LIMIT = 8 * 2**20
MAX_MODELS = 20
MAX_SHADOWING_CHARS = 4096


def hook_environment(workdir: Path, environ: Mapping[str, str]) -> Dict[str, str]:
    """The variables that install the hook in every Python process of the command."""
    folder = workdir / "audit"
    folder.mkdir(mode=0o700)
    (folder / "sitecustomize.py").write_text(script_source("audit"))
    pythonpath = os.pathsep.join([str(folder)] + ([environ["PYTHONPATH"]] if environ.get("PYTHONPATH") else []))
    return {"PYTHONPATH": pythonpath, LOG_VARIABLE: str(workdir / "audit.log")}


def records(log: Path) -> List[dict]:
    """The hook's JSON lines; a line cut off by a dying process is skipped."""
    try:
        raw = read_regular(log, LOG_LIMIT, "the audit log", OSError)
    except OSError:
        return []
    lines = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            lines.append(record)
    return lines


def environ_changes(seen: Mapping[str, str], given: Mapping[str, str], hook: Mapping[str, str]) -> Dict[str, Optional[str]]:
    """The variables that matter to the stack whose value in the program differs from what the doctor
    gave it (set by a wrapper script, an activate, the program itself before re-exec); None for unset."""
    unhooked = {k: v for k, v in seen.items() if k not in hook}
    if seen.get("PYTHONPATH") != hook.get("PYTHONPATH"):
        unhooked["PYTHONPATH"] = seen.get("PYTHONPATH")  # the program set its own
    elif given.get("PYTHONPATH") is not None:
        unhooked["PYTHONPATH"] = given["PYTHONPATH"]
    now, before = relevant_variables({k: v for k, v in unhooked.items() if v is not None}), relevant_variables(given)
    changed: Dict[str, Optional[str]] = {k: v for k, v in now.items() if before.get(k) != v}
    changed.update({k: None for k in before if k not in now})
    return changed


def ending_of(pid: Any, lines: List[dict]) -> str:
    """How a Python process ended, by the hook's lines: "exception" (uncaught), "exit" (through the
    interpreter), or "killed" (neither line: a signal, os._exit, or still running when the run ended)."""
    events = {r.get("event") for r in lines if r.get("pid") == pid}
    return "exception" if "exception" in events else "exit" if "end" in events else "killed"


def shadowing_of(pid: Any, lines: List[dict]) -> Optional[Dict[str, str]]:
    """The module file that hid another of its name, as the hook saw it when the process died of an
    exception about that module (target/audit.py): three bounded texts, or None."""
    for line in lines:
        found = line.get("shadowing") if line.get("event") == "exception" and line.get("pid") == pid else None
        if isinstance(found, dict) and all(isinstance(found.get(key), str) for key in SHADOWING_KEYS):
            return {key: found[key][:MAX_SHADOWING_CHARS] for key in SHADOWING_KEYS}
    return None


def process_facts(start: Mapping, given: Mapping[str, str], hook: Mapping[str, str], lines: List[dict]) -> dict:
    environ = start.get("environ") if isinstance(start.get("environ"), dict) else {}
    return {
        "pid": start.get("pid"),
        "executable": start.get("executable"),
        "prefix": start.get("prefix"),
        "argv": [str(a) for a in (start.get("argv") or [])][:50],
        "environ_changes": environ_changes(environ, given, hook),
        "ended": ending_of(start.get("pid"), lines),
        "shadowing": shadowing_of(start.get("pid"), lines),
    }


def read(log: Path, given: Mapping[str, str], hook: Mapping[str, str]) -> dict:
    """The run's `python_processes` in the order they started and `opened_files`."""
    lines = records(log)
    starts = [r for r in lines if r.get("event") == "start"]
    opened = list(dict.fromkeys(str(r["path"]) for r in lines if r.get("event") == "open" and isinstance(r.get("path"), str)))
    return {"python_processes": [process_facts(s, given, hook, lines) for s in starts[:20]], "opened_files": opened[:200]}


def diagnosed_process(run: Mapping) -> Optional[Mapping]:
    """The Python process whose failure the run is: the last that died of an uncaught exception, else
    the last that was killed, else (a run that failed without a Python failure) the first. A wrapper
    that runs `python -c ...` before the training script is not the one diagnosed."""
    processes = [p for p in run.get("python_processes") or [] if isinstance(p, Mapping)]
    failed = run.get("ending", {}).get("kind") in ("signal", "exit", "hang")
    for ending in ("exception", "killed") if failed else ():
        found = [p for p in processes if p.get("ended") == ending]
        if found:
            return found[-1]
    return processes[0] if processes else None


def real_environment(run: Mapping, environ: Mapping[str, str]) -> Dict[str, str]:
    """The environment the diagnosed interpreter really had: the doctor's, with the recorded changes
    (a secret recorded by name only keeps the doctor's value)."""
    process = diagnosed_process(run)
    if process is None:
        return dict(environ)
    real = dict(environ)
    for name, value in (process.get("environ_changes") or {}).items():
        if value is None:
            real.pop(name, None)
        elif value != REDACTED:
            real[name] = value
    return real


def is_model_archive(path: str) -> bool:
    """A zip with SB3's `data` member: what `inspect` judges. Only its (bounded) directory is read."""
    try:
        with open_zip(Path(path)) as archive:
            return "data" in archive.namelist()
    except EnvdoctorError:
        return False


PICKLE_SUFFIXES = (".pkl", ".pickle", ".pt", ".pth")
MODEL_SUFFIXES = (".zip",) + PICKLE_SUFFIXES


def model_files(run: Mapping) -> List[str]:
    """The model files (SB3 archives, pickles, torch files) the command opened, and those named on its
    command line."""
    named = [a for a in run.get("command", ())[1:] if a.lower().endswith(MODEL_SUFFIXES)]
    return list(dict.fromkeys(list(run.get("opened_files") or []) + [os.path.abspath(a) for a in named]))


def opened_models(run: Mapping) -> List[str]:
    """Those of the model files that the model inspector reads: SB3 archives, and the pickle and torch
    files (.pkl, .pickle, .pt, .pth) it judges like an SB3 entry (sb3/pickle_file.py)."""
    return [p for p in model_files(run) if is_model_archive(p) or (p.lower().endswith(PICKLE_SUFFIXES) and os.path.isfile(p))][:MAX_MODELS]
