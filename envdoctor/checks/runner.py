"""Running checks in isolation: a check that raises becomes a visible finding, never a broken report."""

from __future__ import annotations

import time
import traceback
from typing import Any, Callable, Iterable, List, Mapping, Tuple

from envdoctor.checks import Check
from envdoctor.checks.disproof import applied
from envdoctor.checks.subjects import absence
from envdoctor.facts import CachedFacts, Unrecorded, first_unrecorded
from envdoctor.model import NOT_RECORDED, CheckRun, CheckStatus, Finding, Remedy, Severity


def skip_reason(unrecorded: Unrecorded) -> str:
    """A required section the facts lack, in the words of `check`'s skipped checks."""
    if unrecorded.failure is None:
        return NOT_RECORDED.format(unrecorded.section)
    return f"{unrecorded.section} facts could not be gathered: {unrecorded.failure}"


def missing_facts(check: Check, facts: Mapping[str, Any]) -> str:
    """Why the check cannot be judged from these facts, or "" when it can."""
    found = first_unrecorded(facts, check.requires)
    return skip_reason(found) if found else ""


def crash_finding(check: Check, error: BaseException) -> Finding:
    return Finding(
        id="doctor.check-crashed",
        severity=Severity.WARNING,
        title=f"The check {check.id} crashed; its verdict is missing from this report",
        explanation=f"{type(error).__name__}: {error}",
        evidence={"check": check.id, "traceback": traceback.format_exc()},
        remedies=(Remedy("Please report this to envdoctor's issue tracker with the JSON report attached."),),
    )


def own_findings(check: Check, findings: Iterable[Finding]) -> List[Finding]:
    """The findings, once each is known to carry its check's id: a finding under another id would
    claim a verdict that check never gave (and `--skip` of that id would not hide it)."""
    findings = list(findings)
    for finding in findings:
        if finding.id != check.id:
            raise ValueError(f"it gave a finding with the id {finding.id!r}, not its own")
    return findings


def run_one(check: Check, facts: Mapping[str, Any], accept: Callable[[Check, Iterable[Any]], List[Any]] = own_findings) -> Tuple[List[Any], CheckRun]:
    """What the check yields, once `accept` has judged it well-formed, and the record of its run; a
    check that raises yields only the crash finding."""
    started = time.perf_counter()
    reason = missing_facts(check, facts)
    if reason:
        return [], CheckRun(check.id, CheckStatus.SKIPPED, 0.0, reason)
    try:
        findings = accept(check, check.function(facts))
        if check.disproved_by:
            findings = applied(findings, facts, check.disproved_by)
        reason = "" if findings else absence(check.id, facts)
        status = CheckStatus.FOUND if findings else CheckStatus.SKIPPED if reason else CheckStatus.PASSED
    except Exception as error:
        findings = [crash_finding(check, error)]
        status, reason = CheckStatus.CRASHED, f"{type(error).__name__}: {error}"
    return findings, CheckRun(check.id, status, (time.perf_counter() - started) * 1000, reason)


def run_checks(checks: Iterable[Check], facts: Mapping[str, Any]) -> Tuple[List[Finding], List[CheckRun]]:
    """Every check's findings (most severe first) and the record of each check's run."""
    findings: List[Finding] = []
    runs: List[CheckRun] = []
    views = CachedFacts(facts)  # every check reads the same views, built once
    for check in checks:
        found, run = run_one(check, views)
        findings.extend(found)
        runs.append(run)
    findings.sort(key=lambda f: -f.severity.rank)
    return findings, runs
