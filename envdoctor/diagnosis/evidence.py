"""Reading what linking rules need from the first pass (findings by id, the failure that was seen),
and making a finding into a cause."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from envdoctor.facts import read
from envdoctor.facts.run import RunView
from envdoctor.model import Cause, Finding, Remedy, Severity

# The findings that state a failure seen (a symptom), in the order they are named.
RUN_SYMPTOMS = ("run.crashed", "run.exit-status", "run.hang")
PROBE_SYMPTOMS = ("probe.crash", "probe.hang", "probe.circular-import", "probe.import-error", "probe.stage-failed")
SYMPTOMS = RUN_SYMPTOMS + PROBE_SYMPTOMS


def by_id(facts: Mapping[str, Any]) -> Dict[str, List[Finding]]:
    found: Dict[str, List[Finding]] = {}
    for finding in facts.get("findings") or ():
        found.setdefault(finding.id, []).append(finding)
    return found


def all_of(facts: Mapping[str, Any], *ids: str) -> List[Finding]:
    found = by_id(facts)
    return [f for i in ids for f in found.get(i, ())]


def first(facts: Mapping[str, Any], *ids: str) -> Optional[Finding]:
    """The first finding under any of `ids`, in that order of preference."""
    found = by_id(facts)
    return next((found[i][0] for i in ids if i in found), None)


def symptom(facts: Mapping[str, Any]) -> Optional[Finding]:
    """The failure seen: the command's ending, else the probe's."""
    return first(facts, *SYMPTOMS)


def run_of(facts: Mapping[str, Any]) -> RunView:
    """The command's run as the links read it: an empty run where none was recorded, or where the
    recorded one has the wrong shape (the run checks report that; a link only finds nothing to link)."""
    found = read(facts, RunView)
    return found if isinstance(found, RunView) else RunView()


def run_failed(facts: Mapping[str, Any]) -> bool:
    return run_of(facts).ending_kind in ("signal", "exit", "hang")


def signal_name(facts: Mapping[str, Any]) -> Optional[str]:
    return run_of(facts).ending.get("signal_name")


def first_remedy(finding: Finding) -> Optional[Remedy]:
    """The first remedy with a command to run, else the first one."""
    return next((r for r in finding.remedies if r.command), finding.remedies[0] if finding.remedies else None)


def cause(finding: Finding, confidence: str, evidence: Sequence[str], rule: str) -> Cause:
    """`finding` as a cause: its id and title, the evidence that links it, its first remedy."""
    return Cause(finding.id, confidence, finding.title, tuple(evidence), first_remedy(finding), rule)


def serious(finding: Finding) -> bool:
    return finding.severity >= Severity.WARNING
