"""A command whose memory grew steadily (`envdoctor run`): a leak, and the limit it was heading for.

Pure: the growth is fitted from the recorded samples (facts/run_growth.py), so re-judging a saved
report gives the same verdict. Seed story: an emulator's capture thread kept every frame, its RSS
crept up for minutes, and the process died far from where the memory was taken.
"""

from __future__ import annotations

import shlex
from typing import Any, Iterable, Mapping

from envdoctor.checks import check
from envdoctor.facts import view_of
from envdoctor.facts.run import RunView
from envdoctor.facts.run_describe import amount, growth_caption
from envdoctor.facts.run_growth import more_than_a_ramp, steady_growth
from envdoctor.model import Finding, Remedy, Severity

EVIDENCE_KEYS = ("slope_bytes_per_min", "r2", "start_bytes", "end_bytes", "limit_name", "limit_bytes", "projected_s", "near_limit", "sustained")
LATE_FRACTION = 0.1  # a projection this much of the run past its end still counts as reached


@check("run.memory-growth", "The command's memory grew steadily (a leak), and when it meets a limit", requires=("run",))
def memory_growth(facts: Mapping[str, Any]) -> Iterable[Finding]:
    run = view_of(facts, RunView)
    growth = steady_growth(run.record.get("memory"))
    if growth:
        yield growth_finding(run, growth)


def reached_before_the_end(run: RunView, growth: Mapping[str, Any]) -> bool:
    """The command died and the trend met its limit by then (within sampling's own blur)."""
    if run.ending_kind not in ("signal", "exit") or growth["projected_s"] is None:
        return False
    slack = LATE_FRACTION * run.duration_s + 2 * (run.record.get("sample_interval_s") or 0)
    return growth["projected_s"] <= run.duration_s + slack


def severity_of(reached: bool, growth: Mapping[str, Any]) -> Severity:
    """An error when the command died as the trend met its limit; a warning with a limit in sight or
    growth that went on well past start-up; else a note (a start-up ramp is no leak)."""
    if reached:
        return Severity.ERROR
    return Severity.WARNING if more_than_a_ramp(growth) else Severity.INFO


def growth_finding(run: RunView, growth: Mapping[str, Any]) -> Finding:
    reached = reached_before_the_end(run, growth)
    severity = severity_of(reached, growth)
    rose = (
        f"The process tree's RSS rose from {amount(growth['start_bytes'])} to {amount(growth['end_bytes'])} along a straight line "
        f"(R² {growth['r2']:.2f}) after the first {growth['fitted_from_s']:.1f} s. Memory that keeps growing while the work repeats is held "
        "by something that keeps every step: a list of frames or episodes, tensors kept with their autograd graph (loss instead of loss.item()), "
        "a cache or log without a bound, a replay buffer larger than the machine."
    )
    if reached:
        rose += f" The command died when the trend met the {growth['limit_name']} limit: the growth is what ended it, wherever the final error surfaced."
    elif severity is Severity.INFO:
        rose += " It rose for too short a time to tell a leak from start-up (imports, a model loading) and was far from every limit: a note, not a cause."
    return Finding(
        id="run.memory-growth",
        severity=severity,
        title=f"Memory grows steadily: {growth_caption(growth)}",
        explanation=rose,
        evidence={key: growth[key] for key in EVIDENCE_KEYS},
        remedies=(
            Remedy(
                "Find the line that allocates what grows: trace allocations, then compare two tracemalloc.take_snapshot() results a minute apart (snapshot.compare_to(old, 'lineno')):",
                "PYTHONTRACEMALLOC=1 " + shlex.join(run.command),
            ),
            Remedy("Bound what is kept per step: store numbers (loss.item()), not tensors; cap lists, caches and buffers (collections.deque(maxlen=...))."),
        ),
    )
