"""Work over thousands of node reports: streamed, and spread over the CPUs when there are enough of them.

Parsing and validating a report is pure-Python work, so threads would not help; a process pool does,
fed chunks of files so each worker round trip carries many nodes. Results come back in the nodes'
order as each chunk is done, and only small results ever cross between processes, never reports.
A small fleet is read in this process: starting workers would cost more than they save.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import Callable, Iterator, List, Optional, Sequence, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

CHUNK = 64  # reports per worker task: large enough that sending a chunk costs little next to reading it
PARALLEL_FROM = 128  # fewer reports are read in this process: a pool's start-up would not pay


def usable_cpus() -> int:
    """The CPUs this process may run on (a Slurm or container CPU set included)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def applied(function: Callable[[Item], Result], chunk: Sequence[Item]) -> List[Result]:
    return [function(item) for item in chunk]


def pool_context():
    """Fork where the platform has it: workers start at once with the modules already imported."""
    return multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)


def mapped(function: Callable[[Item], Result], items: Sequence[Item], workers: Optional[int] = None) -> Iterator[Result]:
    """`function` of each item, in the order of `items`; `function` must be picklable (a module-level
    function or a partial of one)."""
    workers = workers or usable_cpus()
    if workers < 2 or len(items) < PARALLEL_FROM:
        yield from map(function, items)
        return
    chunks = [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]
    with ProcessPoolExecutor(max_workers=workers, mp_context=pool_context()) as pool:
        for results in pool.map(partial(applied, function), chunks):
            yield from results
