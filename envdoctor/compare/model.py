"""What comparing two reports yields: ranked differences, the collapsed rest, and one-sided findings.

Frozen and written by the report's codec like the report itself, so `diff --json` is as attachable to a
ticket as a report.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional, Tuple

from envdoctor import codec
from envdoctor.model import Finding


class Impact(enum.Enum):
    """How likely a difference is to break a model or a run moved from A to B; most likely first."""

    BREAKS = "likely to break"
    MAY_BREAK = "may break"
    CHANGES = "changes behaviour"

    @property
    def rank(self) -> int:
        return list(Impact).index(self)


@dataclass(frozen=True)
class Difference:
    """One aspect that differs between A and B, and in one line why that matters."""

    aspect: str
    label: str
    a: str
    b: str
    impact: Impact
    why: str


@dataclass(frozen=True)
class Uncompared:
    """An aspect that could not be compared because one report does not record it."""

    aspect: str
    label: str
    reason: str


@dataclass(frozen=True)
class Change:
    """A difference among the rest (a package, a variable, a host fact); None means absent on that side."""

    group: str
    name: str
    a: Optional[str]
    b: Optional[str]


@dataclass(frozen=True)
class Regraded:
    """A finding both reports have, judged with another severity on each side."""

    a: Finding
    b: Finding

    def to_json(self) -> dict:
        """Written as one line of a table, not as two findings: the id, each side's severity, B's title."""
        return {"id": self.a.id, "a": self.a.severity.value, "b": self.b.severity.value, "title": self.b.title}


@dataclass(frozen=True)
class Side:
    """Which report a side is, in a few words for the reader."""

    name: str
    created: str
    python: str
    tool_version: str


@dataclass(frozen=True)
class Comparison:
    """Everything `envdoctor diff` shows, ranked differences first."""

    a: Side
    b: Side
    ranked: Tuple[Difference, ...] = codec.field(key="differences")
    rest: Tuple[Change, ...] = codec.field(key="other_differences")
    uncompared: Tuple[Uncompared, ...] = codec.field(key="not_compared")
    only_a: Tuple[Finding, ...] = codec.field(key="findings_only_in_a")
    only_b: Tuple[Finding, ...] = codec.field(key="findings_only_in_b")
    regraded: Tuple[Regraded, ...] = codec.field(key="findings_with_other_severity", write=lambda regraded: [r.to_json() for r in regraded])

    @property
    def matters(self) -> bool:
        """Whether anything that could explain "works on A, crashes on B" was found."""
        return bool(self.ranked or self.only_a or self.only_b or self.regraded)

