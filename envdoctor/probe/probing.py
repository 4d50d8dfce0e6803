"""Probing: the ladder in a child, then the bisection of the stage that crashed.

`run_probe` runs the ladder (target/ladder.py) under the diagnosed interpreter and, when a stage
crashes, re-runs it under single environment variations to find the change that makes the crash go
away (a stage that ran out of time is not bisected: every re-run would wait out the same limit). Its result is plain JSON-able data: it is stored as `Report.probe` and judged by the
pure checks in checks/probe.py, so `check --from` re-judges a recorded probe.
"""

from typing import Mapping

from envdoctor import codec
from envdoctor.proc import children
from envdoctor.probe.bisection import bisect, worth_bisecting
from envdoctor.probe.runner import ProbeOptions, run_ladder


def run_probe(python: str, environ: Mapping[str, str], options: ProbeOptions = ProbeOptions()) -> dict:
    """The probe's JSON-able result: the ladder and, when a stage crashed, its bisection."""
    result = run_ladder(python, environ, options, on_event=options.on_event)
    if children.interrupted():  # Ctrl-C killed the ladder: its ending says nothing about the stack
        return codec.encode(result)
    if result.fatal and options.on_event:
        options.on_event({"event": "died", "stage": result.fatal.id, "status": result.fatal.status.value, "reason": result.fatal.reason})
    if result.fatal and options.bisect and worth_bisecting(result.fatal):
        result = bisect(result, environ, options)
    return codec.encode(result)

