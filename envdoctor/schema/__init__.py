"""The report's JSON Schema, shipped with the package, and validation of recorded reports.

jsonschema (with its compiled dependency rpds-py) is optional: the zipapp vendors nothing compiled.
Without it a report gets a structural check instead, the schema's required top-level keys and their
types, and Report.from_json refuses what is wrong deeper down.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Optional

from envdoctor import package_data
from envdoctor.errors import ReportReadError
from envdoctor.model import SCHEMA_VERSION


@lru_cache(maxsize=1)
def report_schema() -> dict:
    return json.loads(package_data.read_text(__name__, "report.schema.json"))


def major(version: Any) -> str:
    return str(version).split(".", 1)[0]


def validate(data: Any, source: str = "report") -> None:
    """Raise ReportReadError with the first problem when `data` is not a report this version reads."""
    if not isinstance(data, dict):
        raise ReportReadError(f"{source} is not an envdoctor report (a JSON object was expected)")
    version = data.get("schema_version")
    if version is None:
        raise ReportReadError(f"{source} is not an envdoctor report (it has no schema_version)")
    if major(version) != major(SCHEMA_VERSION):
        raise ReportReadError(
            f"{source} uses report schema {version}; this envdoctor reads {major(SCHEMA_VERSION)}.x"
        )
    problem = schema_problem(data)
    if problem is not None:
        raise ReportReadError(f"{source} is not a valid envdoctor report at {problem}")


def schema_problem(data: dict) -> Optional[str]:
    """ "WHERE: MESSAGE" for the first place `data` breaks the schema, None when it fits."""
    try:
        import jsonschema
    except ImportError:
        return structural_problem(data)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(report_schema()).iter_errors(data))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"{where}: {error.message}"


JSON_TYPES = {"object": dict, "array": list, "string": str, "null": type(None), "boolean": bool, "integer": int, "number": (int, float)}


def structural_problem(data: dict) -> Optional[str]:
    """The check without jsonschema: each required top-level key present, each top-level value of its
    schema type (both read from the schema itself)."""
    schema = report_schema()
    for key in schema["required"]:
        if key not in data:
            return f"(top level): '{key}' is a required property"
    for key, rule in schema["properties"].items():
        allowed = rule.get("type")
        if key in data and allowed is not None and not of_json_type(data[key], allowed):
            return f"{key}: a value of type {type(data[key]).__name__} is not of type {allowed!r}"
    return None


def of_json_type(value: Any, allowed: Any) -> bool:
    names = allowed if isinstance(allowed, list) else [allowed]
    if isinstance(value, bool):  # JSON true/false is never a number, though bool is an int in Python
        return "boolean" in names
    return any(isinstance(value, JSON_TYPES[name]) for name in names if name in JSON_TYPES)
