"""Running the linking rules over a first pass of findings, through the checks' own runner."""

from __future__ import annotations

from typing import Any, Iterable, List, Mapping, Sequence, Tuple

from envdoctor.checks import Check
from envdoctor.checks.runner import run_one
from envdoctor.diagnosis.rank import ranked
from envdoctor.model import Cause, CheckRun, Finding


def causes_only(rule: Check, results: Iterable[Any]) -> List[Cause]:
    results = list(results)
    for result in results:
        if not isinstance(result, Cause):
            raise TypeError(f"it gave a {type(result).__name__}, not a Cause")
    return results


def link_and_rank(facts: Mapping[str, Any], findings: Sequence[Finding], rules: Sequence[Check]) -> Tuple[Tuple[Cause, ...], List[Finding], List[CheckRun]]:
    """The ranked diagnosis by the linking `rules`, the findings of rules that crashed, and each rule's run record."""
    linked: List[Cause] = []
    crashed: List[Finding] = []
    runs: List[CheckRun] = []
    seen = {**facts, "findings": tuple(findings)}
    for rule in rules:
        results, run = run_one(rule, seen, causes_only)
        linked.extend(r for r in results if isinstance(r, Cause))
        crashed.extend(r for r in results if isinstance(r, Finding))
        runs.append(run)
    return ranked(seen, linked), crashed, runs
