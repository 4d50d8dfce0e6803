"""Checks about the diagnosis itself: a collector that failed must be visible, not a silent gap."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from envdoctor.checks import check
from envdoctor.model import Finding, Remedy, Severity


@check("doctor.collector-failed", "A collector could not gather its facts, so the checks that need them were skipped")
def collector_failed(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for name, section in facts.items():
        if isinstance(section, Mapping) and "error" in section:
            yield Finding(
                id="doctor.collector-failed",
                severity=Severity.WARNING,
                title=f"The {name} facts could not be gathered; the checks that need them were skipped",
                explanation=str(section["error"]),
                evidence={"collector": name},
                remedies=(
                    Remedy("See which checks were skipped:", "envdoctor check -v"),
                    Remedy("If the cause is not on this machine's side, please report it to envdoctor's issue tracker with the JSON report attached."),
                ),
            )
