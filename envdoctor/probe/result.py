"""The probe's result: how every stage ended, how the process ended, and what bisection found.

Frozen dataclasses with enums for statuses, turned into plain JSON for `Report.probe`; checks read
them back with `ProbeResult.from_json`, so a recorded probe is judged exactly like a fresh one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Tuple


class StageStatus(enum.Enum):
    """How one stage ended. FAILED is a Python exception; CRASHED, HUNG, SLOW and EXITED ended the process.

    HUNG and SLOW both ran out of time: a HUNG stage used no CPU at the end, a SLOW one was still working.
    """

    PASSED = "passed"
    SKIPPED = "skipped"
    FAILED = "failed"
    CRASHED = "crashed"
    HUNG = "hung"
    SLOW = "slow"
    EXITED = "exited"
    NOT_RUN = "not_run"

    @property
    def is_failure(self) -> bool:
        return self in (StageStatus.FAILED, StageStatus.CRASHED, StageStatus.HUNG, StageStatus.SLOW, StageStatus.EXITED)

    @property
    def label(self) -> str:
        """How a person reads the status ("not run"); the JSON keeps the value ("not_run")."""
        return self.value.replace("_", " ")

    @property
    def killed_process(self) -> bool:
        return self in (StageStatus.CRASHED, StageStatus.HUNG, StageStatus.SLOW, StageStatus.EXITED)

    @property
    def out_of_time(self) -> bool:
        return self in (StageStatus.HUNG, StageStatus.SLOW)


class Ending(enum.Enum):
    """How the ladder's process ended."""

    COMPLETED = "completed"
    SIGNAL = "signal"
    TIMEOUT = "timeout"
    EXIT = "exit"
    START_ERROR = "start-error"


class Outcome(enum.Enum):
    """A bisection variation's result, compared with the failure it tries to undo."""

    PASSED = "passed"
    SAME = "same"
    DIFFERENT = "different"
    NOT_APPLICABLE = "not-applicable"


@dataclass(frozen=True)
class StageResult:
    """One stage: its status and time; `error` for an exception, `crash` for a dead process
    ({signal, returncode, fatal_error, timeout_after, frames, threads})."""

    id: str
    title: str
    status: StageStatus
    duration_s: float = 0.0
    reason: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)
    error: Optional[Mapping[str, Any]] = None
    crash: Optional[Mapping[str, Any]] = None

    @property
    def signature(self) -> tuple:
        """What identifies this failure when comparing runs: the stage, the status, the signal or exception type."""
        kind = (self.crash or {}).get("signal") or (self.error or {}).get("type")
        return (self.id, self.status, kind)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status.value,
            "duration_s": round(self.duration_s, 4),
            "reason": self.reason,
            "details": dict(self.details),
            "error": None if self.error is None else dict(self.error),
            "crash": None if self.crash is None else dict(self.crash),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "StageResult":
        return cls(
            id=data["id"],
            title=data.get("title", data["id"]),
            status=StageStatus(data["status"]),
            duration_s=float(data.get("duration_s", 0.0)),
            reason=data.get("reason", ""),
            details=data.get("details") or {},
            error=data.get("error"),
            crash=data.get("crash"),
        )


@dataclass(frozen=True)
class VariationResult:
    """One re-run of the ladder up to the failed stage with one environment change."""

    name: str
    command: str
    outcome: Outcome
    summary: str = ""
    duration_s: float = 0.0

    def to_json(self) -> dict:
        return {"name": self.name, "command": self.command, "outcome": self.outcome.value, "summary": self.summary, "duration_s": round(self.duration_s, 3)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "VariationResult":
        return cls(data["name"], data["command"], Outcome(data["outcome"]), data.get("summary", ""), float(data.get("duration_s", 0.0)))


@dataclass(frozen=True)
class Bisection:
    """Which single environment changes make the failure of `stage` go away."""

    stage: str
    failure: str
    variations: Tuple[VariationResult, ...]
    duration_s: float = 0.0

    @property
    def passing(self) -> Tuple[VariationResult, ...]:
        return tuple(v for v in self.variations if v.outcome is Outcome.PASSED)

    def to_json(self) -> dict:
        return {"stage": self.stage, "failure": self.failure, "variations": [v.to_json() for v in self.variations], "duration_s": round(self.duration_s, 3)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Bisection":
        return cls(data["stage"], data["failure"], tuple(VariationResult.from_json(v) for v in data["variations"]), float(data.get("duration_s", 0.0)))


@dataclass(frozen=True)
class ProbeResult:
    """One probe: the ladder's stages in order, how its process ended, and the bisection if one ran."""

    python: str
    ending: Ending
    stages: Tuple[StageResult, ...]
    duration_s: float
    returncode: Optional[int] = None
    signal: Optional[str] = None
    output_tail: str = ""
    bisection: Optional[Bisection] = None
    library_messages: Tuple[str, ...] = ()  # what the native libraries said of their settings (libgomp's "Invalid value ...")

    @property
    def failures(self) -> Tuple[StageResult, ...]:
        return tuple(s for s in self.stages if s.status.is_failure)

    @property
    def fatal(self) -> Optional[StageResult]:
        """The stage that ended the process (crash, hang, exit), if one did."""
        return next((s for s in self.stages if s.status.killed_process), None)

    def stage(self, stage_id: str) -> Optional[StageResult]:
        return next((s for s in self.stages if s.id == stage_id), None)

    def to_json(self) -> dict:
        return {
            "python": self.python,
            "ending": self.ending.value,
            "returncode": self.returncode,
            "signal": self.signal,
            "duration_s": round(self.duration_s, 3),
            "stages": [s.to_json() for s in self.stages],
            "output_tail": self.output_tail,
            "library_messages": list(self.library_messages),
            "bisection": None if self.bisection is None else self.bisection.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ProbeResult":
        bisection = data.get("bisection")
        return cls(
            python=data["python"],
            ending=Ending(data["ending"]),
            stages=tuple(StageResult.from_json(s) for s in data["stages"]),
            duration_s=float(data["duration_s"]),
            returncode=data.get("returncode"),
            signal=data.get("signal"),
            output_tail=data.get("output_tail", ""),
            bisection=None if bisection is None else Bisection.from_json(bisection),
            library_messages=tuple(str(m) for m in data.get("library_messages") or ()),
        )
