"""A fix plan: numbered steps, each planned or skipped with its reason, decided before anything runs.

Planning is pure (facts in, plan out), so the plan a user reads is exactly the plan `--apply` carries
out, and a plan can be recorded next to the environment it changed and read back for a rollback.
"""

from __future__ import annotations

import enum
import shlex
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Tuple


class StepStatus(enum.Enum):
    PLANNED = "planned"
    SKIPPED = "skipped"


class StepKind(enum.Enum):
    """What a step does; only the first three change anything on disk."""

    UNINSTALL = "uninstall"
    INSTALL = "install"
    CREATE_ENV = "create-env"
    EXPORT = "export"
    VERIFY = "verify"

    @property
    def changes_environment(self) -> bool:
        return self in (StepKind.UNINSTALL, StepKind.INSTALL, StepKind.CREATE_ENV)


@dataclass(frozen=True)
class Step:
    """One step: what it does, why (or why not), and the exact command."""

    kind: StepKind
    summary: str
    reason: str
    status: StepStatus = StepStatus.PLANNED
    argv: Tuple[str, ...] = ()

    @property
    def planned(self) -> bool:
        return self.status is StepStatus.PLANNED

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def to_json(self) -> dict:
        return {
            "kind": self.kind.value,
            "status": self.status.value,
            "summary": self.summary,
            "reason": self.reason,
            "argv": list(self.argv),
            "command": self.command,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Step":
        return cls(
            kind=StepKind(data["kind"]),
            summary=data["summary"],
            reason=data["reason"],
            status=StepStatus(data["status"]),
            argv=tuple(data.get("argv", ())),
        )


@dataclass(frozen=True)
class Expectation:
    """What the environment must look like after the plan ran; checked in a fresh child process."""

    installed: Mapping[str, str] = field(default_factory=dict)
    absent: Tuple[str, ...] = ()
    torch_version: Optional[str] = None
    torch_imports: bool = False
    families: Optional[Tuple[str, ...]] = None  # CUDA wheel families allowed afterwards; None: not checked
    ladder: bool = False  # run the probe ladder before and after: no stage that passed may fail

    def to_json(self) -> dict:
        return {
            "installed": dict(self.installed),
            "absent": list(self.absent),
            "families": None if self.families is None else list(self.families),
            "torch_version": self.torch_version,
            "torch_imports": self.torch_imports,
            "ladder": self.ladder,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Expectation":
        return cls(
            installed=dict(data.get("installed", {})),
            absent=tuple(data.get("absent", ())),
            families=None if data.get("families") is None else tuple(data["families"]),
            torch_version=data.get("torch_version"),
            torch_imports=bool(data.get("torch_imports")),
            ladder=bool(data.get("ladder")),
        )


@dataclass(frozen=True)
class PackageChange:
    """One installed package the plan moves: put back at `planned`, put back by `requirement` alone
    (offline: the installer picks), or lost (`requirement` empty)."""

    name: str
    installed: str
    planned: Optional[str]
    requirement: str
    why: str

    @property
    def lost(self) -> bool:
        return not self.requirement

    @property
    def assumed(self) -> bool:
        return bool(self.requirement) and self.planned is None

    def describe(self) -> str:
        if self.lost:
            return f"{self.name} {self.installed} will be lost, because {self.why}"
        after = self.planned or f"a release of `{self.requirement}` the installer picks (not looked up)"
        return f"{self.name} {self.installed} → {after}: {self.why}"

    def to_json(self) -> dict:
        return {"name": self.name, "installed": self.installed, "planned": self.planned, "requirement": self.requirement, "why": self.why}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "PackageChange":
        return cls(data["name"], data["installed"], data.get("planned"), data.get("requirement", ""), data["why"])


@dataclass(frozen=True)
class Plan:
    """Numbered steps for one fix of one interpreter's environment.

    `refusal` says why the change must not be made in this environment. When `alternative` is set the
    steps are the way out instead (a new environment), so they may still be run by hand; otherwise a
    refused plan has no steps at all, and `instead` names what would work on this machine.
    """

    action: str
    title: str
    python: str
    installer: str
    steps: Tuple[Step, ...]
    refusal: Optional[str] = None
    alternative: bool = False
    notes: Tuple[str, ...] = ()
    expect: Expectation = field(default_factory=Expectation)
    instead: Tuple[str, ...] = ()
    versions: Tuple[PackageChange, ...] = ()
    resolved: Tuple[str, ...] = ()  # "name==version" for each distribution pip's dry run would install

    @property
    def blocked(self) -> bool:
        """Refused with nothing offered to run instead."""
        return self.refusal is not None and not self.alternative

    @property
    def changes(self) -> Tuple[Step, ...]:
        """The planned steps that change the environment, in order."""
        return tuple(s for s in self.steps if s.planned and s.kind.changes_environment)

    @property
    def applicable(self) -> bool:
        return self.refusal is None and bool(self.changes)

    def to_json(self) -> dict:
        return {
            "action": self.action,
            "title": self.title,
            "python": self.python,
            "installer": self.installer,
            "refusal": self.refusal,
            "alternative": self.alternative,
            "applicable": self.applicable,
            "steps": [dict(step.to_json(), number=n) for n, step in enumerate(self.steps, 1)],
            "notes": list(self.notes),
            "instead": list(self.instead),
            "versions": [v.to_json() for v in self.versions],
            "resolved": list(self.resolved),
            "expect": self.expect.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Plan":
        return cls(
            action=data["action"],
            title=data["title"],
            python=data["python"],
            installer=data["installer"],
            steps=tuple(Step.from_json(s) for s in data["steps"]),
            refusal=data.get("refusal"),
            alternative=bool(data.get("alternative")),
            notes=tuple(data.get("notes", ())),
            expect=Expectation.from_json(data.get("expect", {})),
            instead=tuple(data.get("instead", ())),
            versions=tuple(PackageChange.from_json(v) for v in data.get("versions", ())),
            resolved=tuple(data.get("resolved", ())),
        )
