"""Reading faulthandler's dumps: the fatal error or timeout, and every thread's Python frames.

faulthandler writes plain text to stderr when a process dies by a signal (`Fatal Python error:
Segmentation fault`) or when `dump_traceback_later` fires (`Timeout (0:00:05)!`). Threads are listed
most recent call first; the crashing one is marked `Current thread`. The last dump in the text wins,
since it is the one written when the process ended.
"""

from __future__ import annotations

import re
from typing import List, Optional

FATAL = re.compile(r"^Fatal Python error: (?P<error>.*)$")
TIMEOUT = re.compile(r"^Timeout \((?P<after>[0-9:.]+)\)!$")
THREAD = re.compile(r"^(?P<current>Current thread|Thread) (?P<id>0x[0-9a-fA-F]+)(?: \[(?P<name>[^\]]*)\])? \(most recent call first\):\s*$")
SINGLE = re.compile(r"^Stack \(most recent call first\):\s*$")  # a dump of the current thread alone
FRAME = re.compile(r'^\s+File "(?P<file>.*)", line (?P<line>\d+|\?\?\?) in (?P<function>.*)$')


def frame(match: re.Match) -> dict:
    line = match.group("line")
    return {"file": match.group("file"), "line": int(line) if line.isdigit() else None, "function": match.group("function").strip()}


def thread_header(line: str) -> Optional[dict]:
    """A new thread's record when `line` opens one; a lone-thread dump's stack is the current thread's."""
    match = THREAD.match(line)
    if match:
        return {"id": match.group("id").lower(), "name": match.group("name"), "current": match.group("current") == "Current thread", "frames": [], "truncated": False}
    if SINGLE.match(line):
        return {"id": None, "name": None, "current": True, "frames": [], "truncated": False}
    return None


def parse(text: str) -> Optional[dict]:
    """The last faulthandler dump in `text` as {fatal_error, timeout_after, threads[{id, name, current,
    truncated, frames[{file, line, function}]}]}, innermost frame first; None when there is no dump."""
    dump: Optional[dict] = None
    thread: Optional[dict] = None
    for line in text.splitlines():
        header = FATAL.match(line) or TIMEOUT.match(line)
        if header:
            dump = {"fatal_error": header.groupdict().get("error"), "timeout_after": header.groupdict().get("after"), "threads": []}
            thread = None
            continue
        opened = thread_header(line)
        if opened:
            if dump is None:  # faulthandler.dump_traceback() output without a header
                dump = {"fatal_error": None, "timeout_after": None, "threads": []}
            thread = opened
            dump["threads"].append(thread)
            continue
        if thread is None:
            continue
        match = FRAME.match(line)
        if match:
            thread["frames"].append(frame(match))
        elif line.strip() == "...":
            thread["truncated"] = True  # faulthandler stops after 100 frames
        elif not line.strip().startswith("<"):
            thread = None  # the thread's block ended (e.g. "Extension modules: ...")
    return dump


def busy_thread(dump: dict, marker: str = "run_stage") -> Optional[dict]:
    """The thread that matters: the crashing one, else the one running a stage (named by `marker`), else the first."""
    threads: List[dict] = dump.get("threads", [])
    for thread in threads:
        if thread["current"]:
            return thread
    for thread in threads:
        if any(f["function"] == marker for f in thread["frames"]):
            return thread
    return threads[0] if threads else None
