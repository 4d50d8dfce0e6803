"""Bisection: which single change to the environment makes a crash go away.

Each variation re-runs the ladder up to the failed stage with one change; they run in parallel, as
many at a time as there are usable CPUs. A variation that passes is the answer and its setting is
the remedy; one that cannot change anything here (LD_PRELOAD is not set, the crash is before torch
loads) is recorded as not applicable rather than run.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Dict, Mapping, Optional, Tuple

from envdoctor.probe import ladder
from envdoctor.probe.result import Bisection, Outcome, ProbeResult, StageResult, VariationResult
from envdoctor.probe.runner import ProbeOptions, run_ladder

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@dataclass(frozen=True)
class Variation:
    """One environment change, what it rules in when it makes the failure go away, and from which stage it can matter."""

    name: str
    sets: Tuple[Tuple[str, str], ...]
    unsets: Tuple[str, ...]
    meaning: str
    from_stage: str = "interpreter"
    needs_cuda: bool = False

    def apply(self, environ: Mapping[str, str]) -> Dict[str, str]:
        changed = {k: v for k, v in environ.items() if k not in self.unsets}
        changed.update(self.sets)
        return changed

    def command(self) -> str:
        """The exact shell line a user runs to keep this setting."""
        parts = []
        if self.sets:
            parts.append("export " + " ".join(f"{k}={v}" for k, v in self.sets))
        if self.unsets:
            parts.append("unset " + " ".join(self.unsets))
        return " && ".join(parts)


VARIATIONS: Tuple[Variation, ...] = (
    Variation(
        "single-thread",
        tuple((name, "1") for name in THREAD_VARIABLES),
        (),
        "The crash needs several OpenMP/BLAS threads: oversubscription, a thread-unsafe BLAS, or two OpenMP runtimes fighting.",
    ),
    Variation(
        "no-cuda",
        (("CUDA_VISIBLE_DEVICES", ""),),
        (),
        "The crash is in the CUDA path (driver, runtime or GPU kernels); torch on the CPU works.",
        from_stage="cuda_init",
        needs_cuda=True,
    ),
    Variation(
        "aten-cpu-default",
        (("ATEN_CPU_CAPABILITY", "default"),),
        (),
        "torch's AVX2/AVX-512 kernels crash on this CPU (or under this hypervisor); its generic kernels work.",
        from_stage="import_torch",
    ),
    Variation(
        "no-ld-overrides",
        (),
        ("LD_LIBRARY_PATH", "LD_PRELOAD"),
        "A library from LD_LIBRARY_PATH or LD_PRELOAD replaces one that the wheels ship (libgomp, libstdc++, libcudart, ...).",
    ),
    Variation(
        "mkl-gnu-threading",
        (("MKL_THREADING_LAYER", "GNU"),),
        (),
        "MKL's Intel OpenMP clashes with GNU OpenMP in this process; MKL on GNU OpenMP avoids it.",
    ),
    Variation(
        "no-pythonpath",
        (),
        ("PYTHONPATH",),
        "A folder on PYTHONPATH comes before site-packages: a module there shadows an installed package, or is a broken copy of one.",
    ),
    Variation(
        "no-user-site",
        (("PYTHONNOUSERSITE", "1"),),
        (),
        "A package in the user site (~/.local/lib/pythonX.Y/site-packages) shadows the environment's own.",
    ),
)
BY_NAME = {v.name: v for v in VARIATIONS}


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


def workers(count: int) -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(count, cpus))


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
        notify(options, "variation", **tried.to_json())
        return tried

    with ThreadPoolExecutor(max_workers=workers(len(candidates))) as pool:
        tried = dict(zip([v.name for v in candidates], pool.map(attempt, candidates)))
    variations = tuple(
        tried.get(v.name) or VariationResult(v.name, v.command(), Outcome.NOT_APPLICABLE, skipped[v.name] or "") for v in VARIATIONS
    )
    return replace(result, bisection=Bisection(failed.id, describe(failed), variations, time.monotonic() - started))
