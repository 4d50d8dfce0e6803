"""Site policies: a team's own standard for its machines, declared in a TOML file instead of code.

`envdoctor check --policy POLICY.toml` judges the facts against it; so can anything that holds a
report's facts. The API is three functions:

- `load(path) -> Policy`: read and validate the file; a bad one raises UsageError naming the key.
- `checks_for(policy) -> list of Check`: the policy's rules as checks, for the rule catalogue
  (envdoctor/catalogue.py), which `check` judges in its first pass beside the other checks, so
  `--only`/`--skip` select them and the diagnosis sees their findings.
- `judge(policy, facts) -> list of Finding`: the policy's verdict on a report's facts alone, pure.

Each rule becomes a check run by the normal check runner, so a rule that crashes on odd facts is a
doctor.check-crashed finding, and one whose facts were not recorded is skipped.
"""

from __future__ import annotations

from typing import Any, List, Mapping

from envdoctor.checks.runner import run_checks
from envdoctor.model import Finding
from envdoctor.policy.load import Policy, Section, load
from envdoctor.policy.rules import checks_for

__all__ = ["Policy", "Section", "load", "checks_for", "judge"]


def judge(policy: Policy, facts: Mapping[str, Any]) -> List[Finding]:
    """Every finding of the policy's rules on a report's `facts`, most severe first."""
    findings, _ = run_checks(checks_for(policy), facts)
    return findings

