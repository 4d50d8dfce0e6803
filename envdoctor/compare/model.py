"""What comparing two reports yields: ranked differences, the collapsed rest, and one-sided findings.

Frozen and JSON-able like the report itself, so `diff --json` is as attachable to a ticket as a report.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional, Tuple

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

    def to_json(self) -> dict:
        return {"aspect": self.aspect, "label": self.label, "a": self.a, "b": self.b, "impact": self.impact.value, "why": self.why}


@dataclass(frozen=True)
class Uncompared:
    """An aspect that could not be compared because one report does not record it."""

    aspect: str
    label: str
    reason: str

    def to_json(self) -> dict:
        return {"aspect": self.aspect, "label": self.label, "reason": self.reason}


@dataclass(frozen=True)
class Change:
    """A difference among the rest (a package, a variable, a host fact); None means absent on that side."""

    group: str
    name: str
    a: Optional[str]
    b: Optional[str]

    def to_json(self) -> dict:
        return {"group": self.group, "name": self.name, "a": self.a, "b": self.b}


@dataclass(frozen=True)
class Regraded:
    """A finding both reports have, judged with another severity on each side."""

    a: Finding
    b: Finding

    def to_json(self) -> dict:
        return {"id": self.a.id, "a": self.a.severity.value, "b": self.b.severity.value, "title": self.b.title}


@dataclass(frozen=True)
class Side:
    """Which report a side is, in a few words for the reader."""

    name: str
    created: str
    python: str
    tool_version: str

    def to_json(self) -> dict:
        return {"name": self.name, "created": self.created, "python": self.python, "tool_version": self.tool_version}


@dataclass(frozen=True)
class Comparison:
    """Everything `envdoctor diff` shows, ranked differences first."""

    a: Side
    b: Side
    ranked: Tuple[Difference, ...]
    rest: Tuple[Change, ...]
    uncompared: Tuple[Uncompared, ...]
    only_a: Tuple[Finding, ...]
    only_b: Tuple[Finding, ...]
    regraded: Tuple[Regraded, ...]

    @property
    def matters(self) -> bool:
        """Whether anything that could explain "works on A, crashes on B" was found."""
        return bool(self.ranked or self.only_a or self.only_b or self.regraded)

    def to_json(self) -> dict:
        return {
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "differences": [d.to_json() for d in self.ranked],
            "other_differences": [c.to_json() for c in self.rest],
            "not_compared": [u.to_json() for u in self.uncompared],
            "findings_only_in_a": [f.to_json() for f in self.only_a],
            "findings_only_in_b": [f.to_json() for f in self.only_b],
            "findings_with_other_severity": [r.to_json() for r in self.regraded],
        }
