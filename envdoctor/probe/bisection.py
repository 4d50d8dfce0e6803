"""Bisection: which single change to the environment makes a crash go away.

Each variation re-runs the ladder up to the failed stage with one change; they run in parallel, as
many at a time as there are usable CPUs. A variation that passes is the answer and its setting is
the remedy; one that cannot change anything here (LD_PRELOAD is not set, the crash is before torch
loads) is recorded as not applicable rather than run.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Mapping, Optional, Tuple

from envdoctor import codec
from envdoctor.cpus import workers
from envdoctor.probe import ladder
from envdoctor.probe.result import Bisection, Outcome, ProbeResult, StageResult, VariationResult
from envdoctor.probe.runner import ProbeOptions, run_ladder
from envdoctor.probe.variations import VARIATIONS, Variation


def not_applicable(variation: Variation, environ: Mapping[str, str], result: ProbeResult, stage: str) -> Optional[str]:
    """Why `variation` cannot change the failure of `stage` here, or None when it is worth a run."""
    if variation.apply(environ) == dict(environ):
        return "the environment already has this setting"
    if ladder.IDS.index(stage) < ladder.IDS.index(variation.from_stage):
        return f"it only matters from {ladder.title(variation.from_stage)} on"
    if variation.needs_cuda:
        cuda = result.stage("cuda_init")
        if cuda is None or cuda.status.value in ("skipped", "not_run"):
            return "the ladder did not use CUDA"
    return None


def describe(stage: StageResult) -> str:
    """e.g. "crashed in import torch (SIGSEGV)"."""
    kind = (stage.crash or {}).get("signal") or (stage.error or {}).get("type") or stage.reason
    return f"{stage.status.value} in {stage.title}" + (f" ({kind})" if kind else "")


def judge(run: ProbeResult, failed: StageResult) -> Tuple[Outcome, str]:
    """PASSED when nothing up to the stage failed, SAME for the same failure, DIFFERENT otherwise."""
    failures = run.failures
    if not failures:
        return Outcome.PASSED, "every stage up to it passed"
    first = failures[0]
    if first.signature == failed.signature:
        return Outcome.SAME, describe(first)
    return Outcome.DIFFERENT, describe(first)


def notify(options: ProbeOptions, event: str, **fields) -> None:
    if options.on_event:
        options.on_event({"event": event, **fields})


def worth_bisecting(failed: StageResult) -> bool:
    """A crash is bisected; a stage that ran out of time is not: each variation would wait out the same
    limit (minutes) to tell nothing more than the stack the hang left and its CPU time already tell."""
    return not failed.status.out_of_time


def bisect(result: ProbeResult, environ: Mapping[str, str], options: ProbeOptions) -> ProbeResult:
    """`result` with the bisection of its fatal stage attached."""
    failed = result.fatal
    started = time.monotonic()
    skipped = {v.name: not_applicable(v, environ, result, failed.id) for v in VARIATIONS}
    candidates = [v for v in VARIATIONS if not skipped[v.name]]
    notify(options, "bisect", stage=failed.id, variations=[v.name for v in candidates])

    def attempt(variation: Variation) -> VariationResult:
        run = run_ladder(result.python, variation.apply(environ), options, until=failed.id)
        outcome, summary = judge(run, failed)
        tried = VariationResult(variation.name, variation.command(), outcome, summary, run.duration_s)
        notify(options, "variation", **codec.encode(tried))
        return tried

    with ThreadPoolExecutor(max_workers=workers(len(candidates))) as pool:
        tried = dict(zip([v.name for v in candidates], pool.map(attempt, candidates)))
    variations = tuple(
        tried.get(v.name) or VariationResult(v.name, v.command(), Outcome.NOT_APPLICABLE, skipped[v.name] or "") for v in VARIATIONS
    )
    return replace(result, bisection=Bisection(failed.id, describe(failed), variations, time.monotonic() - started))
