"""Recording an environment before a fix changes it, so the change can be undone exactly.

A record is a folder under the report directory: `freeze.txt` (the installer's own freeze, the thing a
rollback restores) and `record.json` (that freeze, the distribution list, the installer and the plan,
and later how the apply ended).
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Tuple

from envdoctor import package_data
from envdoctor.errors import UsageError
from envdoctor.files import read_json
from envdoctor.fix import FixError
from envdoctor.fix.freeze_lines import parse
from envdoctor.fix.installer import Installer, freeze
from envdoctor.fix.plan import Plan

RECORD_FILE = "record.json"
FREEZE_FILE = "freeze.txt"
KIND = "envdoctor-fix-record"
# A record of an environment with thousands of distributions is a few MB; anything far larger is not one.
MAX_RECORD_BYTES = 64 * 2 ** 20
# Opening a FIFO for reading waits for a writer, and a terminal could become the controlling one.
JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}


@dataclass(frozen=True)
class Record:
    """An environment as it was before a fix."""

    folder: Path
    created: str
    installer: Installer
    freeze: Tuple[str, ...]
    distributions: Tuple[Mapping[str, Any], ...]
    plan: Optional[Plan] = None
    outcome: Optional[Mapping[str, Any]] = None

    def to_json(self) -> dict:
        return {
            "kind": KIND,
            "created": self.created,
            "installer": self.installer.to_json(),
            "freeze": list(self.freeze),
            "distributions": [dict(d) for d in self.distributions],
            "plan": self.plan.to_json() if self.plan else None,
            "outcome": self.outcome,
        }


def environment_of(python: str) -> Tuple[str, str]:
    """What makes two interpreter paths one environment: the folder they are in and the file they are.
    venv/bin/python and venv/bin/python3 are one; two venvs of one base interpreter are two."""
    return os.path.realpath(os.path.dirname(python)), os.path.realpath(python)


def belongs_to(record: Record, python: str) -> bool:
    """Whether `record` was taken of the environment of the interpreter `python`."""
    return environment_of(record.installer.python) == environment_of(python)


def folder_name() -> str:
    return f"fix-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def write(record: Record) -> None:
    try:
        (record.folder / RECORD_FILE).write_text(json.dumps(record.to_json(), indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise FixError(f"cannot write the record in {record.folder}: {error.strerror or error}") from None


def take(installer: Installer, distributions: Sequence[Mapping[str, Any]], plan: Optional[Plan], report_dir: Path) -> Record:
    """Freeze the environment and save it, with `plan`, in a new folder under `report_dir`; a freeze that
    a rollback could not read back is refused before anything changes."""
    lines = freeze(installer)
    problem = freeze_problem(lines)
    if problem:
        raise FixError(f"cannot record the environment of {installer.python}: its {problem}; nothing was changed")
    folder = report_dir / folder_name()
    try:
        folder.mkdir(parents=True)
        (folder / FREEZE_FILE).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    except OSError as error:
        raise FixError(f"cannot record the environment in {report_dir}: {error.strerror or error}") from None
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    keep = ("name", "version", "location")
    record = Record(folder, created, installer, lines, tuple({k: d.get(k) for k in keep} for d in distributions), plan)
    write(record)
    return record


def finish(record: Record, outcome: Mapping[str, Any]) -> Record:
    """Store how the apply ended next to what it started from."""
    done = replace(record, outcome=dict(outcome))
    write(done)
    return done


@lru_cache(maxsize=1)
def record_validator():
    try:
        import jsonschema  # only a rollback reads records; `fix` without it should not pay for jsonschema
    except ImportError:
        raise UsageError("reading a fix record needs jsonschema, which this envdoctor lacks (the zipapp leaves it out): roll back with a pip-installed envdoctor") from None
    return jsonschema.Draft202012Validator(json.loads(package_data.read_text("envdoctor.schema", "fix-record.schema.json")))


def violation(error) -> str:
    """What a schema error says about the value, without repeating the value (it may be huge or hostile)."""
    rule, wanted = error.validator, error.validator_value
    if rule == "type":
        expected = " or ".join(wanted) if isinstance(wanted, list) else wanted
        return f"must be {expected}, not {JSON_TYPES.get(type(error.instance), 'something else')}"
    if rule in ("const", "enum"):
        return "must be " + " or ".join(json.dumps(v) for v in (wanted if rule == "enum" else [wanted]))
    messages = {
        "maxLength": f"is longer than {wanted} characters",
        "maxItems": f"has more than {wanted} entries",
        "minLength": "is empty",
        "not": "contains control characters",
        "additionalProperties": "has keys a record does not have",
    }
    return messages.get(rule, f"breaks the record schema's {rule!r} rule")


def schema_problem(data: Any) -> Optional[str]:
    """The first way `data` differs from a record, naming the key; None when it is one. The first, not the
    best: errors come lazily, so an array over its size limit is refused before its items are judged."""
    error = next(record_validator().iter_errors(data), None)
    if error is None:
        return None
    where = [str(part) for part in error.absolute_path]
    if error.validator == "required":
        missing = next(key for key in error.validator_value if key not in error.instance)
        return f"{'/'.join(where + [missing])} is missing"
    return f"{'/'.join(where) or 'the record'} {violation(error)}"


def freeze_problem(lines: Sequence[str]) -> Optional[str]:
    """The first freeze line that is not a requirement, by its index."""
    for number, line in enumerate(lines):
        try:
            parse(line)
        except ValueError as error:
            return f"freeze/{number} is not a requirement line ({error})"
    return None


def validated(data: Any, file: Path) -> dict:
    """`data` when it is a record this version can restore; else a one-line UsageError naming the key."""
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise UsageError(f"{file} is not an envdoctor fix record (expected {RECORD_FILE} from `envdoctor fix --apply`)")
    problem = schema_problem(data) or freeze_problem(data["freeze"])
    if problem:
        raise UsageError(f"{file} is a damaged envdoctor fix record: {problem}")
    return data


def load(path: Path) -> Record:
    """A record from its folder or its record.json, checked against the record schema before any of it is used."""
    file = path / RECORD_FILE if path.is_dir() else path
    data = validated(read_json(file, MAX_RECORD_BYTES, "an envdoctor fix record", UsageError, shown=f"the record {path}"), file)
    return Record(
        folder=file.parent,
        created=data["created"],
        installer=Installer.from_json(data["installer"]),
        freeze=tuple(data["freeze"]),
        distributions=tuple(data["distributions"]),
        plan=Plan.from_json(data["plan"]) if data.get("plan") else None,
        outcome=data.get("outcome"),
    )
