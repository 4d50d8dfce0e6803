"""Turning the ladder's events and its process's ending into stage results.

A stage with an `end` event reports itself. The stage that began and never ended is the one that
took the process down, and how the process ended says how: a signal is a crash, faulthandler's
timeout dump or the parent's timeout is a hang, anything else is an unexpected exit. Stages after it
never ran.
"""

from __future__ import annotations

import re
from typing import List, Mapping, Optional, Sequence

from envdoctor.probe import ladder, tracebacks
from envdoctor.probe.result import Ending, ProbeResult, StageResult, StageStatus
from envdoctor.proc import ChildResult

NEEDS = re.compile(r"needs (\w+)")
OUTPUT_TAIL_CHARS = 4000
CRASH_FRAMES = 12


def process_ending(child: ChildResult, dump: Optional[dict]) -> Ending:
    if child.start_error:
        return Ending.START_ERROR
    if child.timed_out or (dump and dump.get("timeout_after")):
        return Ending.TIMEOUT
    if child.signal_number:
        return Ending.SIGNAL
    return Ending.COMPLETED if child.returncode == 0 else Ending.EXIT


def dying_status(ending: Ending) -> StageStatus:
    return {
        Ending.SIGNAL: StageStatus.CRASHED,
        Ending.TIMEOUT: StageStatus.HUNG,
        Ending.EXIT: StageStatus.EXITED,
        Ending.START_ERROR: StageStatus.EXITED,
        Ending.COMPLETED: StageStatus.EXITED,  # ended cleanly while a stage was still running: os._exit in a library
    }[ending]


def crash_record(child: ChildResult, dump: Optional[dict]) -> dict:
    """What is known about a dead process: its signal or exit code and the stack faulthandler left."""
    thread = tracebacks.busy_thread(dump) if dump else None
    return {
        "signal": child.signal_name,
        "returncode": child.returncode,
        "timed_out_in_parent": child.timed_out,
        "fatal_error": dump.get("fatal_error") if dump else None,
        "timeout_after": dump.get("timeout_after") if dump else None,
        "frames": thread["frames"][:CRASH_FRAMES] if thread else [],
        "threads": len(dump["threads"]) if dump else 0,
    }


def reported(event: Mapping, python: str) -> StageResult:
    """A stage that ended by itself, from its `end` event; a missing package gets its install hint."""
    reason = NEEDS.sub(lambda m: f"needs {ladder.title(m.group(1))}", event.get("reason", ""))
    hint = ladder.install_hint(event.get("missing"), python)
    return StageResult(
        id=event["stage"],
        title=ladder.title(event["stage"]),
        status=StageStatus(event["status"]),
        duration_s=float(event.get("duration_s", 0.0)),
        reason=f"{reason}: {hint}" if hint else reason,
        details=event.get("details") or {},
        error=event.get("error"),
    )


def stage_results(events: Sequence[Mapping], planned: Sequence[str], child: ChildResult, dump: Optional[dict], python: str) -> List[StageResult]:
    ends = {e["stage"]: e for e in events if e.get("event") == "end"}
    begins = {e["stage"]: e for e in events if e.get("event") == "begin"}
    results: List[StageResult] = []
    died: Optional[str] = None
    for stage in planned:
        if stage in ends:
            results.append(reported(ends[stage], python))
        elif died:
            results.append(StageResult(stage, ladder.title(stage), StageStatus.NOT_RUN, reason=f"the process died in {ladder.title(died)}"))
        else:
            died = stage
            began = begins.get(stage, {}).get("at_s", 0.0)
            ending = process_ending(child, dump)
            results.append(
                StageResult(
                    stage,
                    ladder.title(stage),
                    dying_status(ending),
                    duration_s=max(child.duration_s - began, 0.0),
                    reason=child.describe() if not (dump and dump.get("timeout_after")) else f"still running after {dump['timeout_after']}",
                    crash=crash_record(child, dump),
                )
            )
    return results


def with_startup(results: List[StageResult], events: Sequence[Mapping]) -> List[StageResult]:
    """The interpreter stage's time is the time until the script first spoke: the interpreter's start."""
    plan = next((e for e in events if e.get("event") == "plan"), None)
    if not plan or not results or results[0].id != "interpreter" or results[0].status is not StageStatus.PASSED:
        return results
    first = results[0]
    return [StageResult(first.id, first.title, first.status, plan["at_s"] + first.duration_s, first.reason, first.details), *results[1:]]


def classify(events: Sequence[Mapping], child: ChildResult, output: str, python: str, until: Optional[str]) -> ProbeResult:
    """The probe's result from everything the ladder's process left behind."""
    dump = tracebacks.parse(output)
    plan = next((e["stages"] for e in events if e.get("event") == "plan"), None)
    if plan is None:  # it died before the script ran: the interpreter's start is what failed
        plan = list(ladder.IDS[: ladder.IDS.index(until) + 1] if until in ladder.IDS else ladder.IDS)
    results = with_startup(stage_results(events, plan, child, dump, python), events)
    return ProbeResult(
        python=python,
        ending=process_ending(child, dump),
        stages=tuple(results),
        duration_s=child.duration_s,
        returncode=child.returncode,
        signal=child.signal_name,
        output_tail=output[-OUTPUT_TAIL_CHARS:],
    )
