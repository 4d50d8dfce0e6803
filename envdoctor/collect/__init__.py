"""Collectors gather facts: plain, JSON-able data, one module per domain.

Each collector is `collect(ctx) -> dict`. They run concurrently (the ones that start child processes
overlap with the ones that read files); a collector that fails records its failure as its facts
(`{"error": ...}`) instead of aborting the run.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, Mapping, Optional, Tuple

from envdoctor.collect import cpu, disk, environ, gpu, libraries, memory, system, target

Collector = Callable[["CollectContext"], dict]


@dataclass(frozen=True)
class CollectContext:
    """What collectors may know about the run: the interpreter to diagnose and the environment."""

    python: str
    environ: Mapping[str, str]


COLLECTORS: Dict[str, Collector] = {
    "target": target.collect,
    "system": system.collect,
    "cpu": cpu.collect,
    "memory": memory.collect,
    "disk": disk.collect,
    "environ": environ.collect,
    "gpu": gpu.collect,
    "libraries": libraries.collect,
}
# Sections no built-in check reads and no view shows, gathered only for a selected rule that requires
# them (a site's plugin): measuring free space costs a child process on every `check`.
ON_DEMAND = frozenset({"disk"})


def timed(collector: Collector, ctx: CollectContext) -> Tuple[dict, float]:
    started = time.perf_counter()
    try:
        facts = collector(ctx)
    except Exception as error:  # a collector's failure is a fact about the machine, not a crash
        facts = {"error": f"{type(error).__name__}: {error}"}
    return facts, (time.perf_counter() - started) * 1000


def gather(ctx: CollectContext, names: Optional[Iterable[str]] = None) -> Tuple[dict, dict]:
    """The facts of the collectors `names` (by default all but the ON_DEMAND ones) by name, and each
    collector's duration in milliseconds."""
    chosen = [name for name in COLLECTORS if name not in ON_DEMAND] if names is None else list(names)
    if not chosen:
        return {}, {}
    with ThreadPoolExecutor(max_workers=len(chosen)) as pool:
        futures = {name: pool.submit(timed, COLLECTORS[name], ctx) for name in chosen}
        results = {name: future.result() for name, future in futures.items()}
    facts = {name: facts for name, (facts, _) in results.items()}
    timings = {f"collect.{name}": ms for name, (_, ms) in results.items()}
    return facts, timings


def begun(ctx: CollectContext) -> "Future[Tuple[dict, dict]]":
    """`gather(ctx)` started in a thread of its own: a command starts the collectors' children first and
    loads what judges their facts while the children run."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="envdoctor-collect")
    try:
        return pool.submit(gather, ctx)
    finally:
        pool.shutdown(wait=False)
