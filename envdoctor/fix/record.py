"""Recording an environment before a fix changes it, so the change can be undone exactly.

A record is a folder under the report directory: `freeze.txt` (the installer's own freeze, the thing a
rollback restores) and `record.json` (that freeze, the distribution list, the installer and the plan,
and later how the apply ended).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Tuple

from envdoctor.errors import UsageError
from envdoctor.fix import FixError
from envdoctor.fix.installer import Installer, freeze
from envdoctor.fix.plan import Plan

RECORD_FILE = "record.json"
FREEZE_FILE = "freeze.txt"
# A record of an environment with thousands of distributions is a few MB; anything far larger is not one.
MAX_RECORD_BYTES = 64 * 2 ** 20


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
            "kind": "envdoctor-fix-record",
            "created": self.created,
            "installer": self.installer.to_json(),
            "freeze": list(self.freeze),
            "distributions": [dict(d) for d in self.distributions],
            "plan": self.plan.to_json() if self.plan else None,
            "outcome": self.outcome,
        }


def folder_name() -> str:
    return f"fix-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def write(record: Record) -> None:
    try:
        (record.folder / RECORD_FILE).write_text(json.dumps(record.to_json(), indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise FixError(f"cannot write the record in {record.folder}: {error.strerror or error}") from None


def take(installer: Installer, distributions: Sequence[Mapping[str, Any]], plan: Optional[Plan], report_dir: Path) -> Record:
    """Freeze the environment and save it, with `plan`, in a new folder under `report_dir`."""
    lines = freeze(installer)
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


def read_json(file: Path, shown: Path) -> Any:
    """The JSON document in `file`, read no further than MAX_RECORD_BYTES."""
    try:
        with file.open("rb") as handle:
            raw = handle.read(MAX_RECORD_BYTES + 1)
    except OSError as error:
        raise UsageError(f"cannot read the record {shown}: {error.strerror or error}") from None
    if len(raw) > MAX_RECORD_BYTES:
        raise UsageError(f"{file} is larger than {MAX_RECORD_BYTES // 2 ** 20} MiB: not an envdoctor fix record")
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError as error:
        raise UsageError(f"{file} is not JSON: {error}") from None


def load(path: Path) -> Record:
    """A record from its folder or its record.json; refused with a clear reason when unreadable."""
    file = path / RECORD_FILE if path.is_dir() else path
    data = read_json(file, path)
    if not isinstance(data, dict) or data.get("kind") != "envdoctor-fix-record":
        raise UsageError(f"{file} is not an envdoctor fix record (expected {RECORD_FILE} from `envdoctor fix --apply`)")
    try:
        return Record(
            folder=file.parent,
            created=data["created"],
            installer=Installer.from_json(data["installer"]),
            freeze=tuple(data["freeze"]),
            distributions=tuple(data.get("distributions", ())),
            plan=Plan.from_json(data["plan"]) if data.get("plan") else None,
            outcome=data.get("outcome"),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise UsageError(f"{file} is a damaged envdoctor fix record ({type(error).__name__}: {error})") from None
