"""How many children run at once: as many as this process may use CPUs, never more than there is work.

The probe's bisection, a run's bisection and the import collector each start their children in
parallel, sized by this one rule.
"""

from __future__ import annotations

import os


def workers(count: int) -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(count, cpus))
