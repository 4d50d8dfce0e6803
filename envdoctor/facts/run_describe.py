"""Words for what happened to a run, shared by its verdicts, its renderers and the line `run` prints
after a clean exit: where it crashed, which signals were forwarded, which processes were left behind,
and how its memory grew (the caption the verdict and the chart both show)."""

from __future__ import annotations

from typing import List, Optional

from envdoctor.crash import stacks
from envdoctor.facts.run_growth import more_than_a_ramp
from envdoctor.words import plural


def forwarding(run: dict) -> List[str]:
    """Each signal the doctor forwarded and how many processes it reached, e.g. "SIGTERM forwarded to 3 processes"."""
    end = run["ending"]
    return [f"{name} forwarded to {plural(reached, 'process')}" for name, reached in zip(end.get("forwarded_signals", ()), end.get("forwarded_to", ()))]


def left_behind_text(run: dict) -> Optional[str]:
    """e.g. "2 processes still ran after the command ended and were stopped: 4242 sleep 1000 (SIGTERM); ..."."""
    left = run.get("left_behind") or []
    if not left:
        return None
    named = "; ".join(f"{p['pid']} {p['cmdline'] or p['name']} ({p['ended_by']})" for p in left)
    return f"{plural(len(left), 'process')} still ran after the command ended and {'was' if len(left) == 1 else 'were'} stopped: {named}"


def aftermath(run: dict) -> List[str]:
    """What the doctor did to the command's processes, one line each: signals it forwarded, processes it stopped."""
    stopped = left_behind_text(run)
    return forwarding(run) + ([stopped] if stopped else [])


def where(run: dict) -> str:
    """e.g. " in the worker thread running capture_frames (grab.py:14), at grab (camera/__init__.py:2) inside
    string_at (ctypes/__init__.py:519)": the frame at fault first, then where it surfaced."""
    thread = stacks.crashed_thread(run.get("python_stacks"))
    if not thread:
        return ""
    text = f" in the {stacks.thread_label(thread)}"
    if thread["frames"]:
        top, fault = thread["frames"][0], stacks.frame_at_fault(thread["frames"])
        text += f", at {stacks.frame_text(fault)}" + ("" if fault is top else f" inside {stacks.frame_text(top)}")
    native = native_top(thread, run)
    if native:
        text += f"; native frame: {native}"
    return text


def native_top(thread: Optional[dict], run: dict) -> Optional[str]:
    frames = (thread or {}).get("native_frames")
    if not frames:
        stopped = [t for t in (run.get("native_stacks") or {}).get("threads", ()) if t.get("stopped")]
        frames = stopped[0]["frames"] if stopped else None
    if not frames:
        return None
    top = frames[0]
    return top["function"] + (f" ({top['location']})" if top.get("location") else "")


def amount(n: Optional[float]) -> str:
    if n is None:
        return "?"
    return f"{n / 2 ** 30:.1f} GiB" if n >= 2 ** 30 else f"{n / 2 ** 20:.0f} MiB"


def about(seconds: float) -> str:
    """A projected time, as roughly as it is known: "~40 s", "~6 min", "~3.5 h", "~4 days"."""
    if seconds < 120:
        return f"~{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"~{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"~{seconds / 3600:.1f} h"
    return f"~{seconds / 86400:.0f} days"


def growth_caption(growth: dict) -> str:
    """e.g. "RSS grows 12 MiB/min; reaches the 2.0 GiB address-space limit at ~6 min" (the projection
    only for more than a start-up ramp)."""
    text = f"RSS grows {amount(growth['slope_bytes_per_min'])}/min"
    if growth.get("projected_s") is not None and more_than_a_ramp(growth):
        text += f"; reaches the {amount(growth['limit_bytes'])} {growth['limit_name']} limit at {about(growth['projected_s'])}"
    return text
