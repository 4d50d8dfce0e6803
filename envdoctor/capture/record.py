"""Turning what was seen of a run into the report's `run` section: plain, JSON-able data.

How the command ended is classified once here; the verdicts, renderers and the exit status all read
that classification instead of re-deriving it.
"""

from __future__ import annotations

import errno
import signal
from typing import Optional

from envdoctor.capture import gdb
from envdoctor.capture.limits import kernel_oom_lines
from envdoctor.capture.supervise import Settings, Supervised
from envdoctor.crash import signals, stacks
from envdoctor.proc.processes import psutil

OUTPUT_TAIL_LINES = 100
# Endings that deserve a crash report without being asked for one.
ABNORMAL = ("signal", "exit", "hang")


def ending_kind(seen: Supervised, returncode: Optional[int]) -> str:
    """clean | exit | signal | hang | interrupted (by a signal the user sent) | not-started."""
    if seen.start_error:
        return "not-started"
    if seen.hung:
        return "hang"
    forwarded = set(seen.forwarded)
    if forwarded and returncode is not None and (signals.signal_of(returncode) in forwarded or returncode - 128 in forwarded):
        return "interrupted"
    if returncode is None or returncode < 0:
        return "signal"
    return "exit" if returncode else "clean"


def exit_status(kind: str, seen: Supervised, returncode: Optional[int]) -> int:
    """The status `envdoctor run` exits with: the command's, as a shell would report it."""
    if kind == "not-started":
        return signals.NOT_FOUND_STATUS if seen.start_errno == errno.ENOENT else signals.NOT_EXECUTABLE_STATUS
    if kind == "hang":
        return signals.HANG_STATUS
    return signals.exit_status(returncode)


def ending(seen: Supervised, returncode: Optional[int]) -> dict:
    kind = ending_kind(seen, returncode)
    number = signals.signal_of(returncode)
    return {
        "kind": kind,
        "returncode": returncode,
        "exit_status": exit_status(kind, seen, returncode),
        "signal": number,
        "signal_name": signals.name(number) if number else None,
        "signal_meaning": signals.meaning(number) if number else None,
        "forwarded_signals": [signal.Signals(n).name for n in seen.forwarded],
        "forwarded_to": list(seen.forwarded_to),
        "start_error": seen.start_error or None,
    }


def ram_total() -> Optional[int]:
    """The machine's RAM: the last limit a steadily growing command meets."""
    try:
        return psutil.virtual_memory().total
    except psutil.Error:
        return None


def memory_facts(seen: Supervised, kind: str, returncode: Optional[int]) -> dict:
    sampler = seen.sampler
    samples = sampler.timeline.samples if sampler else []
    peak = sampler.timeline.peak("rss_bytes") if sampler else None
    killed = signals.signal_of(returncode) == signal.SIGKILL
    return {
        "samples": samples,
        "peak_rss_bytes": peak["rss_bytes"] if peak else None,
        "peak_rss_at_s": peak["t"] if peak else None,
        "address_space_limit_bytes": sampler.address_space_bytes if sampler else None,
        "ram_total_bytes": ram_total(),
        "cgroups": sampler.cgroup_facts() if sampler else [],
        "kernel_oom_lines": kernel_oom_lines(sampler.pids_seen) if sampler and killed and kind != "hang" else [],
    }


def build(seen: Supervised, settings: Settings, gdb_log: str = "") -> dict:
    """The `run` section of the report for one supervised run."""
    native = gdb.parse(gdb_log) if settings.under_gdb else None
    returncode = seen.returncode
    if native is not None and native["returncode"] is not None:
        returncode = native["returncode"]  # the program's own ending, not gdb's
    python_stacks = stacks.parse(seen.tail.stderr_text())
    if native is not None:
        gdb.join(python_stacks, native)
    end = ending(seen, returncode)
    return {
        "command": list(seen.argv),
        "under_gdb": settings.under_gdb,
        "duration_s": round(seen.duration_s, 3),
        "hang_timeout_s": settings.hang_timeout,
        "sample_interval_s": settings.sample_interval,
        "added_variables": dict(seen.added_variables),
        "ending": end,
        "python_stacks": python_stacks,
        "native_stacks": native,
        "output_tail": seen.tail.recent()[-OUTPUT_TAIL_LINES:],
        "left_behind": list(seen.left_behind),
        "memory": memory_facts(seen, end["kind"], returncode),
        "gpu": seen.gpu.facts() if seen.gpu else {"source": None, "devices": [], "samples": [], "problems": []},
    }

