"""A plan (and what applying it did) as text for people, a shell script, or JSON.

Like the report renderers, these compute nothing: every word of a verdict comes from the plan.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import List, Optional

from envdoctor.fix.apply import ApplyResult, Outcome
from envdoctor.fix.plan import Plan


def text(plan: Plan) -> str:
    lines = [f"Plan: {plan.title}", f"  for {plan.python} (installer: {plan.installer})"]
    if plan.refusal:
        lines.append("")
        if plan.alternative:
            lines += [f"Not in this environment: {plan.refusal}.", "Instead, a new environment:"]
        else:
            lines.append(f"REFUSED: {plan.refusal}")
    if plan.instead:
        lines += ["", "What runs on this machine instead:"] + [f"  {line}" for line in plan.instead]
    if plan.steps:
        lines.append("")
    for number, step in enumerate(plan.steps, 1):
        lines.append(f"{number:>2}. [{step.status.value}] {step.summary}")
        lines.append(f"      {'why' if step.planned else 'skipped'}: {step.reason}")
        if step.argv:
            lines.append(f"      $ {step.command}")
    if plan.versions:
        lines += ["", "Packages the pin moves:"] + [f"  - {change.describe()}" for change in plan.versions]
    if plan.resolved:
        lines += ["", "pip's dry run would install:", "  " + " ".join(plan.resolved)]
    if plan.notes:
        lines += ["", "Notes:"] + [f"  - {note}" for note in plan.notes]
    return "\n".join(lines) + "\n"


def sh(plan: Plan) -> str:
    """The plan as a POSIX shell script; a blocked plan is a script that says why and fails."""
    # `set -e` only where the script changes files: a script of exports is meant for `eval` in a live shell.
    lines = ["#!/bin/sh", f"# envdoctor plan: {plan.title}"] + (["set -e"] if plan.changes else [])
    if plan.blocked:
        lines += [f"# instead: {line}" for line in plan.instead]
        lines += [f"echo {shlex.quote('envdoctor: refused: ' + plan.refusal)} >&2", "exit 1"]
    elif plan.refusal:
        lines.append(f"# Not in {plan.python}: {plan.refusal}")
    for number, step in enumerate(plan.steps, 1):
        lines.append(f"# {number}. {step.summary} ({'why' if step.planned else 'skipped'}: {step.reason})")
        if step.planned and step.argv:
            lines.append(step.command)
    lines += [f"# moves: {change.describe()}" for change in plan.versions]
    lines += [f"# note: {note}" for note in plan.notes]
    return "\n".join(lines) + "\n"


def document(plan: Plan, result: Optional[ApplyResult] = None) -> dict:
    return {"plan": plan.to_json(), "result": result.to_json() if result else None}


def as_json(plan: Plan, result: Optional[ApplyResult] = None) -> str:
    return json.dumps(document(plan, result), indent=2) + "\n"


def result_text(result: ApplyResult) -> str:
    lines: List[str] = [f"Result: {result.outcome.value}: {result.message}"]
    if result.verification and result.verification.torch:
        lines.append(f"  torch {result.verification.torch.get('version')} (CUDA {result.verification.torch.get('cuda')}) imports")
    if result.record and result.outcome is Outcome.APPLIED:
        lines.append(f"  undo with: envdoctor fix --rollback {shlex.quote(str(result.record))}")
    elif result.record:
        lines.append(f"  record: {result.record}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PlanRenderer:
    """`envdoctor fix`'s plan, and once carried out what that did: text for people, JSON, and the plan
    as a shell script. A plan goes in no ticket, so it has no Markdown."""

    plan: Plan
    result: Optional[ApplyResult] = None

    def terminal(self, verbose: bool = False, color: bool = False) -> str:
        return result_text(self.result) if self.result else text(self.plan)

    def json(self) -> str:
        return as_json(self.plan, self.result)

    def sh(self) -> str:
        return sh(self.plan)
