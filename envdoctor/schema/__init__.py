"""The report's JSON Schema, shipped with the package, and validation of recorded reports."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from envdoctor.errors import ReportReadError
from envdoctor.model import SCHEMA_VERSION

SCHEMA_PATH = Path(__file__).with_name("report.schema.json")


@lru_cache(maxsize=1)
def report_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def major(version: Any) -> str:
    return str(version).split(".", 1)[0]


def validate(data: Any, source: str = "report") -> None:
    """Raise ReportReadError with the first problem when `data` is not a report this version reads."""
    import jsonschema

    if not isinstance(data, dict):
        raise ReportReadError(f"{source} is not an envdoctor report (a JSON object was expected)")
    version = data.get("schema_version")
    if version is None:
        raise ReportReadError(f"{source} is not an envdoctor report (it has no schema_version)")
    if major(version) != major(SCHEMA_VERSION):
        raise ReportReadError(
            f"{source} uses report schema {version}; this envdoctor reads {major(SCHEMA_VERSION)}.x"
        )
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(report_schema()).iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ReportReadError(f"{source} is not a valid envdoctor report at {where}: {error.message}")
