"""Collectors gather facts: plain, JSON-able data, one module per domain.

Each collector is `collect(ctx) -> dict`. They run concurrently (the ones that start child processes
overlap with the ones that read files); a collector that fails records its failure as its facts
(`{"error": ...}`) instead of aborting the run.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Tuple

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


def timed(collector: Collector, ctx: CollectContext) -> Tuple[dict, float]:
    started = time.perf_counter()
    try:
        facts = collector(ctx)
    except Exception as error:  # a collector's failure is a fact about the machine, not a crash
        facts = {"error": f"{type(error).__name__}: {error}"}
    return facts, (time.perf_counter() - started) * 1000


def gather(ctx: CollectContext) -> Tuple[dict, dict]:
    """All collectors' facts by name, and each collector's duration in milliseconds."""
    with ThreadPoolExecutor(max_workers=len(COLLECTORS)) as pool:
        futures = {name: pool.submit(timed, c, ctx) for name, c in COLLECTORS.items()}
        results = {name: future.result() for name, future in futures.items()}
    facts = {name: facts for name, (facts, _) in results.items()}
    timings = {f"collect.{name}": ms for name, (_, ms) in results.items()}
    return facts, timings
