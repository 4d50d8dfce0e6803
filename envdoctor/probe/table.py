"""The probe's result as rows, shared by every renderer so the terminal, Markdown and JSON agree."""

from __future__ import annotations

from typing import List, Mapping, Optional, Tuple

from envdoctor import codec
from envdoctor.crash import stacks
from envdoctor.probe.result import Ending, ProbeResult, StageResult, StageStatus


def note(stage: StageResult) -> str:
    """The one line that says why a stage did not simply pass."""
    if stage.crash:
        frames = [f for f in stage.crash.get("frames") or () if isinstance(f, Mapping) and isinstance(f.get("file"), str)]
        fault = stacks.frame_at_fault(frames, own=("<string>",))
        where = f"; at {stacks.frame_text(fault)}" + ("" if fault is frames[0] else f" inside {stacks.frame_text(frames[0])}") if fault else ""
        return f"{stage.reason}{where}"
    if stage.error:
        message = (stage.error.get("message") or "").strip().splitlines()
        return f"{stage.error.get('type')}: {message[0] if message else ''}"
    if stage.status is StageStatus.SKIPPED and stage.reason.startswith("needs "):
        return stage.reason.split(": ", 1)[0]  # the stage it needs shows the install hint, once
    return stage.reason


def rows(probe: Mapping) -> List[Tuple[StageStatus, str, str, str]]:
    """(status, stage title, time, note) per stage; no time for stages that did not run."""
    result = codec.decode(ProbeResult, probe)
    return [
        (s.status, s.title, f"{s.duration_s:.2f} s" if s.status not in (StageStatus.SKIPPED, StageStatus.NOT_RUN) else "", note(s))
        for s in result.stages
    ]


def summary(probe: Mapping) -> str:
    """e.g. "completed in 6.2 s" or "crashed in import torch (killed by SIGSEGV) after 1.4 s"."""
    result = codec.decode(ProbeResult, probe)
    fatal = result.fatal
    if fatal:
        return f"{fatal.status.value} in {fatal.title} ({fatal.reason}) after {result.duration_s:.1f} s"
    if result.ending is Ending.COMPLETED:
        failed = len(result.failures)
        return f"completed in {result.duration_s:.1f} s" + (f", {failed} stage{'s' if failed > 1 else ''} failed" if failed else "")
    return f"{result.ending.value} after {result.duration_s:.1f} s"


def bisection_rows(probe: Mapping) -> Optional[List[Tuple[str, str, str]]]:
    """(setting, outcome, what happened) per variation, or None when no bisection ran."""
    bisection = codec.decode(ProbeResult, probe).bisection
    if bisection is None:
        return None
    return [(v.command, v.outcome.value, v.summary) for v in bisection.variations]
