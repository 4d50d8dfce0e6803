"""Saving reports under a report directory with names that never collide."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from envdoctor.errors import UsageError
from envdoctor.model import Report
from envdoctor.render import json as json_renderer


def report_name(prefix: str = "envdoctor") -> str:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"{prefix}-{stamp}-{os.urandom(3).hex()}.json"


def save_report(report: Report, directory: Path, prefix: str = "envdoctor") -> Path:
    """Write the JSON report into `directory` (created if needed) and return its path."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / report_name(prefix)
        with open(path, "x", encoding="utf-8") as stream:
            stream.write(json_renderer.render(report))
    except OSError as error:
        raise UsageError(f"cannot save the report in {directory}: {error.strerror or error}") from None
    return path
