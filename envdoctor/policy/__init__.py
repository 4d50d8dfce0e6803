"""Site policies: a team's own standard for its machines, declared in a TOML file instead of code.

`envdoctor check --policy POLICY.toml` judges the facts against it; so can anything that holds a
report's facts. The API is three functions:

- `load(path) -> Policy`: read and validate the file; a bad one raises UsageError naming the key.
- `judge(policy, facts) -> list of Finding`: the policy's verdict on a report's facts, pure.
- `judged(report, policy, only, skip) -> Report`: the report with the policy's findings and check runs added.

Each rule becomes a check (`checks_for`) run by the normal check runner, so a rule that crashes on
odd facts is a doctor.check-crashed finding, and one whose facts were not recorded is skipped.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, List, Mapping

from envdoctor.checks.registry import select
from envdoctor.checks.runner import run_checks
from envdoctor.model import Finding, Report
from envdoctor.policy.load import Policy, Section, load
from envdoctor.policy.rules import checks_for

__all__ = ["Policy", "Section", "load", "checks_for", "judge", "judged"]


def judge(policy: Policy, facts: Mapping[str, Any]) -> List[Finding]:
    """Every finding of the policy's rules on a report's `facts`, most severe first."""
    findings, _ = run_checks(checks_for(policy), facts)
    return findings


def judged(report: Report, policy: Policy, only: Iterable[str] = (), skip: Iterable[str] = ()) -> Report:
    """`report` with the findings of the policy's rules selected by `only`/`skip` (ids or the
    `policy` domain) added among its own, judged from its recorded facts and probe."""
    checks = select(checks_for(policy), tuple(only), tuple(skip))
    findings, runs = run_checks(checks, {**report.facts, "probe": report.probe})
    merged = sorted([*report.findings, *findings], key=lambda f: -f.severity.rank)
    return replace(report, findings=tuple(merged), checks=(*report.checks, *runs))
