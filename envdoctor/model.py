"""The report model: what a run of the doctor found, as frozen dataclasses.

Everything a renderer shows and everything `--from` re-judges lives here, so the JSON form is the
contract with bug tickets: it is versioned (`SCHEMA_VERSION`), validated against the schema that
ships in `envdoctor/schema/`, and written and read by `envdoctor.codec` from these fields alone.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

from envdoctor import codec

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


def kind_of(value: Any) -> str:
    """A recorded remedy's kind; unknown, a shell line."""
    return value if value in REMEDY_KINDS else SHELL


@dataclass(frozen=True)
class Remedy:
    """One concrete step: a sentence, and where there is one, the exact command or setting. `kind`
    says what the command is: one shell line a user pastes ("shell"), or code for their program
    ("python"), which is shown as code, never after a shell prompt."""

    summary: str
    command: Optional[str] = None
    kind: str = codec.field(SHELL, omit_default=True, read=kind_of)  # a shell line's kind is not written, so older readers read the report as before; absent, a shell line


@dataclass(frozen=True)
class Finding:
    """A verdict about the environment, with the facts it rests on and what to do about it."""

    id: str
    severity: Severity
    title: str
    explanation: str = ""
    evidence: Mapping[str, Any] = codec.field(default_factory=dict, read=dict)
    remedies: Tuple[Remedy, ...] = ()
    references: Tuple[str, ...] = ()

    @property
    def domain(self) -> str:
        return self.id.split(".", 1)[0]


NOT_RECORDED = "no {} facts were recorded"
NOT_RECORDED_PATTERN = re.compile(NOT_RECORDED.format(r"\S+"))


@dataclass(frozen=True)
class CheckRun:
    """The record of one check's run, so a report shows what was judged and what could not be."""

    id: str
    status: CheckStatus
    duration_ms: float = codec.field(places=3)
    reason: str = ""

    @property
    def unasked(self) -> bool:
        """Skipped because its facts were never gathered (no --model, no --imports, --no-probe): a
        part the user did not ask for, not a gap in what was asked."""
        return self.status is CheckStatus.SKIPPED and NOT_RECORDED_PATTERN.fullmatch(self.reason) is not None


CONFIDENCES = ("confirmed", "likely", "possible", "none")


def confidence_of(value: Any) -> str:
    """A recorded cause's confidence; absent or one this version does not know, only possible."""
    return value if value in CONFIDENCES else "possible"


@dataclass(frozen=True)
class Cause:
    """One entry of a report's diagnosis: the finding that explains a failure (its id), how sure the
    doctor is, the evidence that links it to what was seen, and the one step to take first.

    confirmed: an experiment or an exact match shows it (a setting that makes the crash go away, the
    crashing frame is code from the model file); likely: one strong link (the GPU was full just before
    the segfault); possible: it can cause such failures, nothing ties it to this one; none: nothing
    known fits, and the remedy is the next step to learn more."""

    id: str
    confidence: str = codec.field(read=confidence_of, absent=lambda cause: confidence_of(None))
    summary: str
    evidence: Tuple[str, ...] = codec.field((), read=codec.texts)
    remedy: Optional[Remedy] = None
    rule: str = ""

    @property
    def rank(self) -> int:
        return CONFIDENCES.index(self.confidence)


@dataclass(frozen=True)
class Report:
    """One diagnosis: the facts gathered, the findings judged from them, and how long each part took.

    `probe` is the crash-isolated probe ladder's result, kept as plain JSON-able data (None when the
    ladder was not run). `run` is what `envdoctor run` saw of the user's command (None otherwise).
    `diagnosis` ranks the findings that explain a failure, most likely cause first.
    """

    tool_version: str = codec.field(key="tool", write=lambda version: {"name": "envdoctor", "version": version}, read=lambda tool: tool["version"])
    created: str
    target_python: str
    facts: Mapping[str, Any]
    findings: Tuple[Finding, ...] = ()
    checks: Tuple[CheckRun, ...] = ()
    probe: Optional[Mapping[str, Any]] = None
    timings_ms: Mapping[str, float] = codec.field(default_factory=dict, places=3)
    schema_version: str = SCHEMA_VERSION
    run: Optional[Mapping[str, Any]] = codec.field(None, omit_default=True)  # written only by `envdoctor run`
    diagnosis: Tuple[Cause, ...] = ()

    json_order = ("schema_version", "tool_version", "created", "target_python", "facts", "diagnosis", "findings", "checks", "probe", "timings_ms", "run")

