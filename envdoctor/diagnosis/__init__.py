"""The diagnosis: the findings of every part (the run's frames and exception, the files it opened, the
environment's checks, the probe, bisection) linked by small pure rules into causes, ranked.

A linking rule is registered with `@link` and judged by the same runner as the checks (a rule that
raises is a `doctor.check-crashed` finding, never a lost report). It reads the facts and the findings
of the first pass (`facts["findings"]`) and yields `Cause`s that name the finding at the root.
"""

from __future__ import annotations

from typing import Callable, Iterable, List, Mapping

from envdoctor.checks import Check
from envdoctor.model import Cause

LinkFunction = Callable[[Mapping], Iterable[Cause]]
LINKS: List[Check] = []


def link(id: str, summary: str) -> Callable[[LinkFunction], LinkFunction]:
    """Register the decorated function as the linking rule `diagnosis.<id>`."""

    def register(function: LinkFunction) -> LinkFunction:
        LINKS.append(Check(f"diagnosis.{id}", summary, (), function))
        return function

    return register
