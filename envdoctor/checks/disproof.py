"""A verdict the probe disproved: one severity per cause, whatever path led to it.

Severities mean one thing everywhere: error, it will crash here (or the probe saw it crash); warning,
it can crash or misbehave and the probe did not disprove it; info, worth knowing. A check whose feared
crash lies on known probe stages declares them (`@check(..., disproved_by=(...))`); when the probe ran
every one of them and they passed, each finding of that check says so and is at most a warning. The
probe is judged as recorded, so `check --from` reaches the same verdict.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, List, Mapping, Optional, Sequence

from envdoctor.facts.probe import probe_of
from envdoctor.model import Finding, Severity
from envdoctor.probe.result import StageStatus


def disproof(facts: Mapping[str, Any], stages: Sequence[str]) -> Optional[str]:
    """What the probe ran and passed of `stages`, in words, when it passed every one; else None."""
    probe = probe_of(facts)
    ran = [probe.stage(s) for s in stages] if probe else []
    if not ran or any(stage is None or stage.status is not StageStatus.PASSED for stage in ran):
        return None
    return "the probe passed " + ", ".join(f"'{stage.title}'" for stage in ran) + " in this environment"


def disproved(finding: Finding, note: str) -> Finding:
    return dataclasses.replace(
        finding,
        severity=min(finding.severity, Severity.WARNING, key=lambda s: s.rank),
        explanation=f"{finding.explanation} The probe disproved the crash this fears here: {note}; a risk for what it did not run.",
        evidence={**finding.evidence, "disproved_by_probe": note},
    )


def applied(findings: Iterable[Finding], facts: Mapping[str, Any], stages: Sequence[str]) -> List[Finding]:
    findings = list(findings)
    note = disproof(facts, stages) if findings and stages else None
    return [disproved(f, note) for f in findings] if note else findings
