"""One `envdoctor run`: supervise the command (under gdb when asked) and record what was seen."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Mapping, Optional, Sequence

from envdoctor.capture import gdb, opened, record
from envdoctor.capture.exceptions import last_exception
from envdoctor.capture.supervise import Settings, Supervisor, child_environment
from envdoctor.collect import linker
from envdoctor.crash import bounds


def run_command(argv: Sequence[str], settings: Settings, environ: Mapping[str, str]) -> dict:
    """Run `argv` to its end and return the report's `run` section for it, with what its Python
    processes said about themselves (their interpreter and environment, the files they opened)."""
    with tempfile.TemporaryDirectory(prefix="envdoctor-run-") as workdir:
        command, log = (gdb.wrap(argv, Path(workdir)) if settings.under_gdb else (list(argv), None))
        hook = opened.hook_environment(Path(workdir), environ)
        seen = Supervisor(command, settings, {**environ, **hook}).run()
        seen.argv = tuple(argv)
        run = record.build(seen, settings, gdb.read_log(log) if log else "")
        run["exception"] = last_exception(seen.tail.stderr_text())
        run.update(opened.read(Path(workdir) / "audit.log", child_environment(environ)[0], hook))
        run["exception"] = with_shadowing(run)
        run["loader"] = loader_facts(run, seen.tail.stderr_text(), environ)
        return bounds.within_budget(run)


def with_shadowing(run: dict) -> Optional[dict]:
    """The exception, with the module file that hid another of its name where the process that died
    of it saw one."""
    raised, process = run["exception"], opened.diagnosed_process(run) or {}
    if raised and process.get("ended") == "exception" and process.get("shadowing"):
        return {**raised, "shadowing": process["shadowing"]}
    return raised


def loader_facts(run: dict, stderr: str, environ: Mapping[str, str]) -> Optional[dict]:
    """The dynamic linker's failure in the output, resolved in the environment of the process that
    failed: the library it loaded, what decided it, and which files define what it lacked."""
    if run["ending"]["kind"] in ("clean", "not-started"):
        return None
    process = opened.diagnosed_process(run) or {}
    return linker.loader_failure(stderr, opened.real_environment(run, environ), process.get("prefix") or "")
