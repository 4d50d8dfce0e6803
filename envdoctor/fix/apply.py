"""`fix --apply` and `fix --rollback`: carry out a plan, or restore an environment to its record.

`apply` asks, records the environment (fix/record.py), runs the probe ladder where the plan asks for it,
runs the changing steps, verifies the result in a fresh process (and the ladder again: a stage that
passed before must pass after) and, when any of it fails, rolls back to the record; `restore` runs the steps back to a record
and checks that the installer's freeze matches it again. `confirm(plan) -> bool` decides whether anything
happens: the CLI passes its prompt, or `always` for `--yes`; a declined plan changes nothing (Outcome.DRY_RUN).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple

from envdoctor.fix import FixError
from envdoctor.fix import record as records
from envdoctor.fix.installer import Installer, freeze, run_step
from envdoctor.fix.plan import Plan
from envdoctor.fix.rollback import by_key, restore_plan
from envdoctor.fix import verify as verifying
from envdoctor.fix.verify import Verification, regressions, verify

Confirm = Callable[[Plan], bool]
OnLine = Callable[[str], None]
Ladder = Callable[[str], Tuple[dict, ...]]


class Outcome(enum.Enum):
    DRY_RUN = "dry-run"
    REFUSED = "refused"
    NOTHING_TO_DO = "nothing-to-do"
    APPLIED = "applied"
    RESTORED = "restored"
    ROLLED_BACK = "rolled-back"
    ROLLBACK_FAILED = "rollback-failed"

    @property
    def succeeded(self) -> bool:
        return self in (Outcome.DRY_RUN, Outcome.NOTHING_TO_DO, Outcome.APPLIED, Outcome.RESTORED)


@dataclass(frozen=True)
class StepRun:
    """How one executed step ended."""

    number: int
    command: str
    ended: str
    ok: bool
    duration_s: float

    def to_json(self) -> dict:
        return {"number": self.number, "command": self.command, "ended": self.ended, "ok": self.ok, "duration_s": round(self.duration_s, 2)}


@dataclass(frozen=True)
class ApplyResult:
    """What `--apply` (or `--rollback`) did, with the record that can undo it."""

    outcome: Outcome
    message: str
    record: Optional[Path] = None
    runs: Tuple[StepRun, ...] = ()
    verification: Optional[Verification] = None
    rollback: Optional["ApplyResult"] = None
    ladders: Optional[Mapping[str, Tuple[dict, ...]]] = None  # "before" and "after": each stage's id, title, status, reason

    def to_json(self) -> dict:
        return {
            "outcome": self.outcome.value,
            "message": self.message,
            "record": str(self.record) if self.record else None,
            "runs": [r.to_json() for r in self.runs],
            "verification": self.verification.to_json() if self.verification else None,
            "rollback": self.rollback.to_json() if self.rollback else None,
            "ladders": {when: list(stages) for when, stages in self.ladders.items()} if self.ladders is not None else None,
        }


def always(plan: Plan) -> bool:
    """The confirm callback of `--yes`."""
    return True


def run_steps(plan: Plan, on_line: OnLine) -> Tuple[Tuple[StepRun, ...], Optional[str]]:
    """Run the plan's changing steps in order; stop at the first failure and say which."""
    runs = []
    for number, step in enumerate(plan.steps, 1):
        if not (step.planned and step.kind.changes_environment):
            continue
        on_line(f"==> {number}. {step.summary}")
        on_line(f"$ {step.command}")
        try:
            result = run_step(step.argv, on_line)
        except KeyboardInterrupt:
            runs.append(StepRun(number, step.command, "interrupted", False, 0.0))
            return tuple(runs), f"step {number} ({step.summary}) was interrupted"
        runs.append(StepRun(number, step.command, result.describe(), result.ok, result.duration_s))
        if not result.ok:
            return tuple(runs), f"step {number} ({step.summary}) {result.describe()}"
    return tuple(runs), None


def apply(
    plan: Plan,
    installer: Installer,
    distributions: Sequence[Mapping[str, Any]],
    report_dir: Path,
    confirm: Confirm,
    on_line: OnLine,
    ladder: Ladder = verifying.ladder,
) -> ApplyResult:
    """Carry out `plan` if it may be and `confirm` agrees; roll back to the record on any failure.
    `ladder` runs the probe ladder in an interpreter's environment (a parameter, so its cost can be
    left out where the ladder is not the subject)."""
    if plan.refusal is not None:
        return ApplyResult(Outcome.REFUSED, plan.refusal)
    if not plan.changes:
        return ApplyResult(Outcome.NOTHING_TO_DO, "nothing to change: every step is skipped")
    if not confirm(plan):
        return ApplyResult(Outcome.DRY_RUN, "nothing was changed")
    record = records.take(installer, distributions, plan, report_dir)
    on_line(f"Recorded the environment in {record.folder}")
    ladders = None
    if plan.expect.ladder:
        on_line("==> Running the probe ladder before the fix")
        ladders = {"before": ladder(plan.python)}
    runs, failure = run_steps(plan, on_line)
    verification = None
    if failure is None:
        on_line("==> Verifying in a fresh process")
        verification = verify(plan.python, plan.expect)
        if not verification.ok:
            failure = "verification failed: " + "; ".join(verification.problems)
    if failure is None and ladders is not None:
        on_line("==> Running the probe ladder after the fix")
        ladders["after"] = ladder(plan.python)
        worse = regressions(ladders["before"], ladders["after"])
        if worse:
            failure = "the probe ladder got worse: " + "; ".join(worse)
    if failure is None:
        result = ApplyResult(Outcome.APPLIED, "applied and verified", record.folder, runs, verification, ladders=ladders)
    else:
        on_line(f"==> {failure}; rolling back to {record.folder}")
        undone = restore_or_explain(record, on_line)
        outcome = Outcome.ROLLED_BACK if undone.outcome in (Outcome.RESTORED, Outcome.NOTHING_TO_DO) else Outcome.ROLLBACK_FAILED
        result = ApplyResult(outcome, f"{failure}; {undone.message}", record.folder, runs, verification, undone, ladders)
    records.finish(record, result.to_json())
    return result


def restore_or_explain(record: records.Record, on_line: OnLine) -> ApplyResult:
    """An automatic rollback that cannot even start (no installer left) is a failed result, not a crash."""
    try:
        return restore(record, plan_restore(record), on_line)
    except FixError as error:
        return ApplyResult(Outcome.ROLLBACK_FAILED, f"could not restore {record.folder}: {error}", record.folder)


def plan_restore(record: records.Record) -> Plan:
    """The steps back to `record` from the environment as it is now."""
    return restore_plan(record, freeze(record.installer))


def restore(record: records.Record, plan: Plan, on_line: OnLine, confirm: Confirm = always) -> ApplyResult:
    """Carry out a restore plan and check that the freeze is the recorded one again."""
    if not plan.changes:
        return ApplyResult(Outcome.NOTHING_TO_DO, "the environment already matches the record", record.folder)
    if not confirm(plan):
        return ApplyResult(Outcome.DRY_RUN, "nothing was changed", record.folder)
    runs, failure = run_steps(plan, on_line)
    after = by_key(freeze(record.installer))
    differences = sorted(set(after.items()) ^ set(by_key(record.freeze).items()))
    if failure is None and not differences:
        return ApplyResult(Outcome.RESTORED, f"restored the environment recorded in {record.folder}", record.folder, runs)
    detail = failure or "still differs from the record: " + ", ".join(line for _, line in differences)
    return ApplyResult(Outcome.ROLLBACK_FAILED, f"could not restore {record.folder}: {detail}", record.folder, runs)
