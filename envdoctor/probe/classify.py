"""Turning the ladder's events and its process's ending into stage results.

A stage with an `end` event reports itself. The stage that began and never ended is the one that
took the process down, and how the process ended says how: a signal is a crash, faulthandler's
timeout dump or the parent's timeout ran out of time, anything else is an unexpected exit. Stages after
it never ran. A stage that ran out of time while still using CPU was slow, not hung: its record keeps the
CPU time it used and whether it was still working when the limit ended.
"""

from __future__ import annotations

import re
from typing import List, Mapping, Optional, Sequence, Tuple

from envdoctor.crash import tracebacks
from envdoctor.probe import ladder
from envdoctor.probe.result import Ending, ProbeResult, StageResult, StageStatus
from envdoctor.proc.children import ChildResult

NEEDS = re.compile(r"needs (\w+)")
OUTPUT_TAIL_CHARS = 4000
# What OpenMP and BLAS runtimes print of their environment settings, wherever it falls in the output:
# "libgomp: Invalid value for environment variable OMP_NUM_THREADS", "OMP: Warning #42: ...", "OpenBLAS Warning : ...".
LIBRARY_MESSAGE = re.compile(r"^(libgomp: |OMP: (Warning|Error|Info)|OpenBLAS (Warning|WARNING)|Intel MKL (WARNING|ERROR)|MKL (WARNING|ERROR))")
MAX_LIBRARY_MESSAGES, MAX_MESSAGE_CHARS = 20, 300
CRASH_FRAMES = 12
# Of one CPU over the stage's last seconds: at least this much use means it was still working.
WORKING_SHARE = 0.2


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


def stage_activity(begin: Mapping, activity: Optional[Mapping]) -> dict:
    """The CPU time a stage used and whether it was still using CPU when it was ended; None where unsampled."""
    started, now = begin.get("cpu_s"), (activity or {}).get("cpu_s")
    if started is None or now is None:
        return {"cpu_s": None, "still_working": None}
    return {"cpu_s": round(max(now - started, 0.0), 2), "still_working": activity["share"] >= WORKING_SHARE}


def ending_reason(child: ChildResult, dump: Optional[dict]) -> str:
    if dump and dump.get("timeout_after"):
        return f"still running after {dump['timeout_after']}"
    return child.describe()


def out_of_time(begin: Mapping, base: str, activity: Mapping) -> str:
    """Why a stage was ended at its limit, in the words its CPU time earns: slow, or hung with no progress."""
    if activity["still_working"]:
        limit = begin.get("limit_s")
        when = f"when its {limit:.0f} s limit ended" if isinstance(limit, (int, float)) else "when its time limit ended"
        return f"still working ({activity['cpu_s']:.1f} s of CPU) {when}: slow, not hung"
    if activity["still_working"] is False:
        return f"{base}, idle at the end ({activity['cpu_s']:.1f} s of CPU in all): hung"
    return base


def dying_stage(stage: str, begin: Mapping, child: ChildResult, dump: Optional[dict], activity: Optional[Mapping]) -> StageResult:
    """The stage the process died in, and how: a crash, an exit, or out of time (slow or hung)."""
    status = dying_status(process_ending(child, dump))
    record, reason = crash_record(child, dump), ending_reason(child, dump)
    if status is StageStatus.HUNG:
        record.update(stage_activity(begin, activity))
        reason = out_of_time(begin, reason, record)
        status = StageStatus.SLOW if record["still_working"] else status
    duration = max(child.duration_s - begin.get("at_s", 0.0), 0.0)
    return StageResult(stage, ladder.title(stage), status, duration_s=duration, reason=reason, crash=record)


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


def stage_results(
    events: Sequence[Mapping], planned: Sequence[str], child: ChildResult, dump: Optional[dict], python: str, activity: Optional[Mapping]
) -> List[StageResult]:
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
            results.append(dying_stage(stage, begins.get(stage, {}), child, dump, activity))
    return results


def with_startup(results: List[StageResult], events: Sequence[Mapping]) -> List[StageResult]:
    """The interpreter stage's time is the time until the script first spoke: the interpreter's start."""
    plan = next((e for e in events if e.get("event") == "plan"), None)
    if not plan or not results or results[0].id != "interpreter" or results[0].status is not StageStatus.PASSED:
        return results
    first = results[0]
    return [StageResult(first.id, first.title, first.status, plan["at_s"] + first.duration_s, first.reason, first.details), *results[1:]]


def classify(
    events: Sequence[Mapping], child: ChildResult, output: str, python: str, until: Optional[str], activity: Optional[Mapping] = None
) -> ProbeResult:
    """The probe's result from everything the ladder's process left behind; `activity` is its CPU clock's reading."""
    dump = tracebacks.parse(output)
    plan = next((e["stages"] for e in events if e.get("event") == "plan"), None)
    if plan is None:  # it died before the script ran: the interpreter's start is what failed
        plan = list(ladder.IDS[: ladder.IDS.index(until) + 1] if until in ladder.IDS else ladder.IDS)
    results = with_startup(stage_results(events, plan, child, dump, python, activity), events)
    return ProbeResult(
        python=python,
        ending=process_ending(child, dump),
        stages=tuple(results),
        duration_s=child.duration_s,
        returncode=child.returncode,
        signal=child.signal_name,
        output_tail=output[-OUTPUT_TAIL_CHARS:],
        library_messages=library_messages(output),
    )


def library_messages(output: str) -> Tuple[str, ...]:
    """The native libraries' own lines about their settings, each once, in order, bounded."""
    found: List[str] = []
    for line in output.splitlines():
        line = line.strip()[:MAX_MESSAGE_CHARS]
        if LIBRARY_MESSAGE.match(line) and line not in found:
            found.append(line)
            if len(found) == MAX_LIBRARY_MESSAGES:
                break
    return tuple(found)
