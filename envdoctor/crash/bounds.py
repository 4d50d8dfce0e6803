"""Bounds on the stacks a crash records, whatever faulthandler or gdb returns.

A C-stack overflow under `--gdb` gives one thread of a hundred thousand frames; a program with a
thread pool per library gives hundreds of threads. Kept whole they make reports of tens of megabytes
that nobody can attach to a ticket. So each thread's recursion is collapsed (a cycle of up to
MAX_PERIOD frames repeated MIN_REPEATS times or more in a row is kept once, followed by one frame that
says "f → g repeated 52,000 times"), then each thread keeps its INNERMOST frames and its outermost
ones up to MAX_FRAMES, the threads beyond MAX_THREADS are counted but dropped (the crashed one is kept
first), and once MAX_TOTAL_FRAMES are kept the remaining threads keep only their innermost few.
Last, the whole run section is cut to RUN_BYTES of JSON (within_budget), so a report stays within
2 MB whatever names the frames carry.
"""

from __future__ import annotations

import json
from typing import Callable, Hashable, List, Mapping, Optional, Sequence

MAX_PERIOD = 8
MIN_REPEATS = 3
MAX_FRAMES = 200
INNERMOST = 150
MAX_THREADS = 100
MAX_TOTAL_FRAMES = 4000
FEW = 10
MARKER_FILE = "<envdoctor>"  # the file of a Python frame that stands for frames left out or repeated

Key = Callable[[Mapping], Hashable]


def python_key(frame: Mapping) -> Hashable:
    return (frame.get("file"), frame.get("line"), frame.get("function"))


def native_key(frame: Mapping) -> Hashable:
    return (frame.get("function"), frame.get("location"))


def python_marker(text: str, repeated: Optional[int]) -> dict:
    return {"file": MARKER_FILE, "line": None, "function": text, "repeated": repeated}


def native_marker(text: str, repeated: Optional[int]) -> dict:
    return {"index": None, "function": text, "location": None, "repeated": repeated}


def cycle_length(frames: Sequence[Mapping], at: int, key: Key) -> tuple:
    """(period, repeats) of the shortest cycle that starts at `at` and repeats MIN_REPEATS times or
    more in a row, else (0, 0)."""
    for period in range(1, MAX_PERIOD + 1):
        pattern = [key(f) for f in frames[at : at + period]]
        if len(pattern) < period:
            break
        end = at + period
        while end + period <= len(frames) and all(key(frames[end + k]) == pattern[k] for k in range(period)):
            end += period
        repeats = (end - at) // period
        if repeats >= MIN_REPEATS:
            return period, repeats
    return 0, 0


def collapsed(frames: Sequence[dict], key: Key, marker: Callable[[str, Optional[int]], dict]) -> List[dict]:
    """`frames` with each recursion kept once and followed by a frame saying how often it repeated."""
    kept: List[dict] = []
    at = 0
    while at < len(frames):
        period, repeats = cycle_length(frames, at, key)
        if not period:
            kept.append(frames[at])
            at += 1
            continue
        cycle = frames[at : at + period]
        names = clipped(" → ".join(str(f.get("function")) for f in cycle))
        kept += list(cycle) + [marker(f"{names} repeated {repeats - 1:,} more times", repeats - 1)]
        at += period * repeats
    return kept


def capped(frames: List[dict], marker: Callable[[str, Optional[int]], dict], limit: int = MAX_FRAMES, innermost: int = INNERMOST) -> List[dict]:
    """The innermost and outermost frames of a stack longer than `limit`, with one frame counting the rest."""
    if len(frames) <= limit:
        return frames
    outermost = max(limit - innermost, 0)
    left = len(frames) - innermost - outermost
    return frames[:innermost] + [marker(f"{left:,} frames left out", None)] + (frames[-outermost:] if outermost else [])


def bounded(threads: List[dict], key: Key, marker: Callable[[str, Optional[int]], dict], first: Callable[[dict], bool]) -> tuple:
    """`threads` (dicts with "frames") bounded in place: (the threads kept, how many were dropped). The
    threads for which `first` holds (the one that crashed) come first in the frame budget."""
    order = sorted(range(len(threads)), key=lambda i: not first(threads[i]))
    keep = sorted(order[:MAX_THREADS])
    total = 0
    for index in order[:MAX_THREADS]:
        thread = threads[index]
        frames = capped(collapsed(thread.get("frames") or [], key, marker), marker)
        if total + len(frames) > MAX_TOTAL_FRAMES:
            frames = capped(frames, marker, FEW, FEW)
        thread["frames"] = frames
        total += len(frames)
    return [threads[i] for i in keep], len(threads) - len(keep)


def deepest_recursion(frames: Sequence[Mapping]) -> Optional[Mapping]:
    """The marker of the recursion repeated most often among `frames`, or None."""
    markers = [f for f in frames if isinstance(f.get("repeated"), int) and not isinstance(f.get("repeated"), bool)]
    return max(markers, key=lambda f: f["repeated"]) if markers else None


RUN_BYTES = 1_500_000  # the run section's share of a report that stays within 2 MB of JSON
TEXT_CHARS = 400  # a C++ frame's demangled name can run to pages


def clipped(text: Optional[str]) -> Optional[str]:
    return text if text is None or len(text) <= TEXT_CHARS else text[:TEXT_CHARS] + "…"


def size_of(value) -> int:
    return len(json.dumps(value, default=str))


def within_budget(run: dict, budget: int = RUN_BYTES) -> dict:
    """`run` cut until its JSON fits `budget`, least telling first: the frames of threads that did not
    crash, then the crashed thread's outer frames, the output's older lines, the files opened, and last
    the threads that did not crash."""
    steps = (
        lambda: shrink_threads(run, not_crashed, FEW),
        lambda: shrink_threads(run, not_crashed, 1),
        lambda: shrink_threads(run, lambda t: True, 2 * FEW),
        lambda: run.update(output_tail=(run.get("output_tail") or [])[-20:]),
        lambda: run.update(opened_files=(run.get("opened_files") or [])[:20]),
        lambda: drop_threads(run, not_crashed),
    )
    for step in steps:
        if size_of(run) <= budget:
            break
        step()
    return run


def not_crashed(thread: Mapping) -> bool:
    return not (thread.get("current") or thread.get("stopped"))


def shrink_threads(run: dict, which: Callable[[dict], bool], keep: int) -> None:
    for stacks in (run.get("python_stacks"), run.get("native_stacks")):
        for thread in (stacks or {}).get("threads") or ():
            if which(thread):
                marker = native_marker if stacks is run.get("native_stacks") else python_marker
                thread["frames"] = capped(list(thread.get("frames") or []), marker, keep, keep)
                if thread.get("native_frames"):
                    thread["native_frames"] = capped(list(thread["native_frames"]), native_marker, keep, keep)


def drop_threads(run: dict, which: Callable[[dict], bool]) -> None:
    for stacks in (run.get("python_stacks"), run.get("native_stacks")):
        if stacks and stacks.get("threads"):
            kept = [t for t in stacks["threads"] if not which(t)]
            stacks["threads_left_out"] = (stacks.get("threads_left_out") or 0) + len(stacks["threads"]) - len(kept)
            stacks["threads"] = kept
