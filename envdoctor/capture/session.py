"""One `envdoctor run`: supervise the command (under gdb when asked) and record what was seen."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Mapping, Sequence

from envdoctor.capture import gdb, record
from envdoctor.capture.supervise import Settings, Supervisor


def run_command(argv: Sequence[str], settings: Settings, environ: Mapping[str, str]) -> dict:
    """Run `argv` to its end and return the report's `run` section for it."""
    with tempfile.TemporaryDirectory(prefix="envdoctor-run-") as workdir:
        command, log = (gdb.wrap(argv, Path(workdir)) if settings.under_gdb else (list(argv), None))
        seen = Supervisor(command, settings, environ).run()
        seen.argv = tuple(argv)
        return record.build(seen, settings, gdb.read_log(log) if log else "")
