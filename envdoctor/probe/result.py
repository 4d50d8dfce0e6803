"""The probe's result: how every stage ended, how the process ended, and what bisection found.

Frozen dataclasses with enums for statuses, turned into plain JSON for `Report.probe` by
`envdoctor.codec`; checks read them back with `codec.decode(ProbeResult, ...)`, so a recorded probe is
judged exactly like a fresh one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

from envdoctor import codec


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
    title: str = codec.field(absent=lambda stage: stage["id"])  # reports of the first versions named a stage by its id alone
    status: StageStatus
    duration_s: float = codec.field(0.0, places=4)
    reason: str = ""
    details: Mapping[str, Any] = codec.field(default_factory=dict, read=lambda details: details or {})
    error: Optional[Mapping[str, Any]] = None
    crash: Optional[Mapping[str, Any]] = None

    @property
    def signature(self) -> tuple:
        """What identifies this failure when comparing runs: the stage, the status, the signal or exception type."""
        kind = (self.crash or {}).get("signal") or (self.error or {}).get("type")
        return (self.id, self.status, kind)


@dataclass(frozen=True)
class VariationResult:
    """One re-run of the ladder up to the failed stage with one environment change."""

    name: str
    command: str
    outcome: Outcome
    summary: str = ""
    duration_s: float = codec.field(0.0, places=3)


@dataclass(frozen=True)
class Bisection:
    """Which single environment changes make the failure of `stage` go away."""

    stage: str
    failure: str
    variations: Tuple[VariationResult, ...]
    duration_s: float = codec.field(0.0, places=3)

    @property
    def passing(self) -> Tuple[VariationResult, ...]:
        return tuple(v for v in self.variations if v.outcome is Outcome.PASSED)


@dataclass(frozen=True)
class ProbeResult:
    """One probe: the ladder's stages in order, how its process ended, and the bisection if one ran."""

    python: str
    ending: Ending
    stages: Tuple[StageResult, ...]
    duration_s: float = codec.field(places=3)
    returncode: Optional[int] = None
    signal: Optional[str] = None
    output_tail: str = ""
    bisection: Optional[Bisection] = None
    # what the native libraries said of their settings (libgomp's "Invalid value ..."); null in a report, none
    library_messages: Tuple[str, ...] = codec.field((), read=lambda messages: codec.texts(messages or ()))

    json_order = ("python", "ending", "returncode", "signal", "duration_s", "stages", "output_tail", "library_messages", "bisection")

    @property
    def failures(self) -> Tuple[StageResult, ...]:
        return tuple(s for s in self.stages if s.status.is_failure)

    @property
    def fatal(self) -> Optional[StageResult]:
        """The stage that ended the process (crash, hang, exit), if one did."""
        return next((s for s in self.stages if s.status.killed_process), None)

    def stage(self, stage_id: str) -> Optional[StageResult]:
        return next((s for s in self.stages if s.id == stage_id), None)
