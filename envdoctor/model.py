"""The report model: what a run of the doctor found, as frozen, JSON-able dataclasses.

Everything a renderer shows and everything `--from` re-judges lives here, so the JSON form is the
contract with bug tickets: it is versioned (`SCHEMA_VERSION`) and validated against the schema that
ships in `envdoctor/schema/`.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Tuple

SCHEMA_VERSION = "1.1"  # 1.1: the `diagnosis` section


class Severity(enum.Enum):
    """How bad a finding is; the order is the order of the members."""

    OK = "ok"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return list(Severity).index(self)

    def __ge__(self, other: "Severity") -> bool:
        return self.rank >= other.rank

    def __gt__(self, other: "Severity") -> bool:
        return self.rank > other.rank

    def __le__(self, other: "Severity") -> bool:
        return self.rank <= other.rank

    def __lt__(self, other: "Severity") -> bool:
        return self.rank < other.rank


class CheckStatus(enum.Enum):
    """How a check's run ended: a crashed or skipped check is a visible state, never a lost report."""

    PASSED = "passed"
    FOUND = "found"
    SKIPPED = "skipped"
    CRASHED = "crashed"


SHELL = "shell"
PYTHON = "python"
POWERSHELL = "powershell"  # a command for Windows itself, as for WSL: not a line for the Linux shell
REMEDY_KINDS = (SHELL, PYTHON, POWERSHELL)


@dataclass(frozen=True)
class Remedy:
    """One concrete step: a sentence, and where there is one, the exact command or setting. `kind`
    says what the command is: one shell line a user pastes ("shell"), or code for their program
    ("python"), which is shown as code, never after a shell prompt."""

    summary: str
    command: Optional[str] = None
    kind: str = SHELL

    def to_json(self) -> dict:
        """The kind is written only where it is not a shell line, so reports read as before by older readers."""
        data: dict = {"summary": self.summary, "command": self.command}
        if self.kind != SHELL:
            data["kind"] = self.kind
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Remedy":
        return cls(summary=data["summary"], command=data.get("command"), kind=kind_of(data.get("kind")))


def kind_of(value: Any) -> str:
    """A recorded remedy's kind; absent (reports written before kinds existed) or unknown, a shell line."""
    return value if value in REMEDY_KINDS else SHELL


@dataclass(frozen=True)
class Finding:
    """A verdict about the environment, with the facts it rests on and what to do about it."""

    id: str
    severity: Severity
    title: str
    explanation: str = ""
    evidence: Mapping[str, Any] = field(default_factory=dict)
    remedies: Tuple[Remedy, ...] = ()
    references: Tuple[str, ...] = ()

    @property
    def domain(self) -> str:
        return self.id.split(".", 1)[0]

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "severity": self.severity.value,
            "title": self.title,
            "explanation": self.explanation,
            "evidence": dict(self.evidence),
            "remedies": [r.to_json() for r in self.remedies],
            "references": list(self.references),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Finding":
        return cls(
            id=data["id"],
            severity=Severity(data["severity"]),
            title=data["title"],
            explanation=data.get("explanation", ""),
            evidence=dict(data.get("evidence", {})),
            remedies=tuple(Remedy.from_json(r) for r in data.get("remedies", ())),
            references=tuple(data.get("references", ())),
        )


NOT_RECORDED = "no {} facts were recorded"
NOT_RECORDED_PATTERN = re.compile(NOT_RECORDED.format(r"\S+"))


@dataclass(frozen=True)
class CheckRun:
    """The record of one check's run, so a report shows what was judged and what could not be."""

    id: str
    status: CheckStatus
    duration_ms: float
    reason: str = ""

    @property
    def unasked(self) -> bool:
        """Skipped because its facts were never gathered (no --model, no --imports, --no-probe): a
        part the user did not ask for, not a gap in what was asked."""
        return self.status is CheckStatus.SKIPPED and NOT_RECORDED_PATTERN.fullmatch(self.reason) is not None

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "status": self.status.value,
            "duration_ms": round(self.duration_ms, 3),
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CheckRun":
        return cls(
            id=data["id"],
            status=CheckStatus(data["status"]),
            duration_ms=float(data["duration_ms"]),
            reason=data.get("reason", ""),
        )


CONFIDENCES = ("confirmed", "likely", "possible", "none")


@dataclass(frozen=True)
class Cause:
    """One entry of a report's diagnosis: the finding that explains a failure (its id), how sure the
    doctor is, the evidence that links it to what was seen, and the one step to take first.

    confirmed: an experiment or an exact match shows it (a setting that makes the crash go away, the
    crashing frame is code from the model file); likely: one strong link (the GPU was full just before
    the segfault); possible: it can cause such failures, nothing ties it to this one; none: nothing
    known fits, and the remedy is the next step to learn more."""

    id: str
    confidence: str
    summary: str
    evidence: Tuple[str, ...] = ()
    remedy: Optional[Remedy] = None
    rule: str = ""

    @property
    def rank(self) -> int:
        return CONFIDENCES.index(self.confidence)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "confidence": self.confidence,
            "summary": self.summary,
            "evidence": list(self.evidence),
            "remedy": None if self.remedy is None else self.remedy.to_json(),
            "rule": self.rule,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Cause":
        remedy = data.get("remedy")
        return cls(
            id=data["id"],
            confidence=data["confidence"] if data.get("confidence") in CONFIDENCES else "possible",
            summary=data["summary"],
            evidence=tuple(str(e) for e in data.get("evidence", ())),
            remedy=None if remedy is None else Remedy.from_json(remedy),
            rule=data.get("rule", ""),
        )


@dataclass(frozen=True)
class Report:
    """One diagnosis: the facts gathered, the findings judged from them, and how long each part took.

    `probe` is the crash-isolated probe ladder's result, kept as plain JSON-able data (None when the
    ladder was not run). `run` is what `envdoctor run` saw of the user's command (None otherwise).
    `diagnosis` ranks the findings that explain a failure, most likely cause first.
    """

    tool_version: str
    created: str
    target_python: str
    facts: Mapping[str, Any]
    findings: Tuple[Finding, ...] = ()
    checks: Tuple[CheckRun, ...] = ()
    probe: Optional[Mapping[str, Any]] = None
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    schema_version: str = SCHEMA_VERSION
    run: Optional[Mapping[str, Any]] = None
    diagnosis: Tuple[Cause, ...] = ()

    def to_json(self) -> dict:
        data = {
            "schema_version": self.schema_version,
            "tool": {"name": "envdoctor", "version": self.tool_version},
            "created": self.created,
            "target_python": self.target_python,
            "facts": dict(self.facts),
            "diagnosis": [c.to_json() for c in self.diagnosis],
            "findings": [f.to_json() for f in self.findings],
            "checks": [c.to_json() for c in self.checks],
            "probe": None if self.probe is None else dict(self.probe),
            "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
        }
        if self.run is not None:
            data["run"] = dict(self.run)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Report":
        return cls(
            schema_version=data["schema_version"],
            tool_version=data["tool"]["version"],
            created=data["created"],
            target_python=data["target_python"],
            facts=data["facts"],
            findings=tuple(Finding.from_json(f) for f in data.get("findings", ())),
            checks=tuple(CheckRun.from_json(c) for c in data.get("checks", ())),
            probe=data.get("probe"),
            timings_ms=dict(data.get("timings_ms", {})),
            run=data.get("run"),
            diagnosis=tuple(Cause.from_json(c) for c in data.get("diagnosis", ())),
        )
