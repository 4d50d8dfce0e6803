"""The check registry: one small pure function per check, registered with `@check`.

A check takes the facts of a report (a mapping of sections) and yields findings, reading them through
the typed views of envdoctor.facts; it prints nothing, starts no process and reads no environment. Third-party checks arrive through the `envdoctor.checks` entry-point group:
loading the entry point imports a module whose functions use `@check`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, List, Mapping, Tuple

from envdoctor.model import Finding

CheckFunction = Callable[[Mapping[str, Any]], Iterable[Finding]]
ENTRY_POINT_GROUP = "envdoctor.checks"


@dataclass(frozen=True)
class Check:
    """A registered check: its stable id, a one-line summary, the fact sections it reads, and the probe
    stages whose passing disproves the crash it fears (checks/disproof.py)."""

    id: str
    summary: str
    requires: Tuple[str, ...]
    function: CheckFunction
    disproved_by: Tuple[str, ...] = ()

    @property
    def domain(self) -> str:
        return self.id.split(".", 1)[0]


CHECKS: List[Check] = []


def check(id: str, summary: str, requires: Iterable[str] = (), disproved_by: Iterable[str] = ()) -> Callable[[CheckFunction], CheckFunction]:
    """Register the decorated function as the check `id`; `requires` names the facts it needs, and
    `disproved_by` the probe stages that, all passed, make its findings at most a warning."""

    def register(function: CheckFunction) -> CheckFunction:
        if any(existing.id == id for existing in CHECKS):
            raise ValueError(f"check id {id!r} is registered twice")
        CHECKS.append(Check(id, summary, tuple(requires), function, tuple(disproved_by)))
        return function

    return register
