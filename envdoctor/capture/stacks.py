"""Every thread's Python stack, parsed from the dump faulthandler writes to stderr when a process dies.

faulthandler names threads only by their pthread id, so each thread is named here by what it runs:
the main thread runs the script's `<module>`; a `threading.Thread` runs its target, which is the first
frame of the user's own code above threading's bootstrap (e.g. `capture_frames`, not the main loop).
"""

from __future__ import annotations

import os
import re
from typing import Iterable, List, Optional

from envdoctor.probe import tracebacks

# The standard library (not site-packages): frames there are plumbing, not what a thread is "for".
STDLIB = re.compile(r"([/\\][Ll]ib[/\\]python\d+(\.\d+)?t?[/\\](?!(site|dist)-packages[/\\])|^<frozen )")
PACKAGES = re.compile(r"[/\\](site|dist)-packages[/\\]")
ENVDOCTOR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse(text: str) -> Optional[dict]:
    """The last faulthandler dump in `text` (dumps of workers that died earlier may precede the
    command's own): the fatal error and each thread's frames, innermost first, and what it runs."""
    dump = tracebacks.parse(text)
    if not dump:
        return None
    for thread in dump["threads"]:
        thread.update(describe(thread["frames"]))
    return dump


def describe(frames: List[dict]) -> dict:
    """What a thread is: `main` (runs a script's module code), `worker` (a threading.Thread), or `other`."""
    if not frames:
        return {"kind": "other", "entry": None}
    outermost = frames[-1]
    own = [f for f in reversed(frames) if not STDLIB.search(f["file"])]
    if outermost["function"] == "_bootstrap" and outermost["file"].endswith("threading.py"):
        above = [f for f in reversed(frames) if not f["file"].endswith("threading.py")]
        return {"kind": "worker", "entry": (own or above or [outermost])[0]}
    if outermost["function"] == "<module>" or (own and own[0]["function"] == "<module>"):
        return {"kind": "main", "entry": (own or [outermost])[0]}
    return {"kind": "other", "entry": (own or [outermost])[0]}


def under(path: str, root: str) -> bool:
    root = root.rstrip("/\\")
    return bool(root) and (path == root or path.startswith(root + os.sep) or path.startswith(root + "/"))


def is_plumbing(path: str, stdlib: Iterable[str] = (), own: Iterable[str] = ()) -> bool:
    """A frame of the standard library (under the crashed interpreter's `stdlib` folders where they were
    recorded, else any `lib/pythonX.Y/` outside site-packages) or of envdoctor itself (its package, or
    the `own` names its scripts run as): where a crash surfaced, not what caused it."""
    return in_stdlib(path, [r for r in stdlib if r]) or path.startswith("<frozen ") or under(path, ENVDOCTOR) or path in own


def in_stdlib(path: str, roots: List[str]) -> bool:
    if not roots:
        return bool(STDLIB.search(path))
    return any(under(path, r) for r in roots) and not PACKAGES.search(path)


def frame_at_fault(frames: List[dict], stdlib: Iterable[str] = (), own: Iterable[str] = ()) -> Optional[dict]:
    """The innermost frame outside the standard library and envdoctor (the package's `__init__.py:2`, not
    `ctypes/__init__.py:519 in string_at`); the innermost frame when every one is plumbing."""
    stdlib, own = list(stdlib), list(own)
    return next((f for f in frames if not is_plumbing(f["file"], stdlib, own)), frames[0] if frames else None)


def frame_text(frame: dict) -> str:
    """e.g. "<module> (torch/__init__.py:2)"."""
    return f"{frame.get('function', '?')} ({short(frame['file'])}:{frame.get('line', '?')})"


def crashed_thread(stacks: Optional[dict]) -> Optional[dict]:
    """The thread that received the fatal signal (faulthandler's "Current thread")."""
    if not stacks:
        return None
    return next((t for t in stacks["threads"] if t["current"]), None)


def thread_label(thread: dict) -> str:
    """e.g. "worker thread running capture_frames (grab.py:14)"."""
    entry = thread.get("entry")
    where = f" running {entry['function']} ({short(entry['file'])}:{entry['line']})" if entry else ""
    name = thread.get("native_name")
    named = f" “{name}”" if name else ""
    kind = {"main": "main thread", "worker": "worker thread"}.get(thread.get("kind"), "thread")
    return f"{kind}{named}{where}"


def short(path: str) -> str:
    """The file's name, with its folder when the name alone says nothing (`ctypes/__init__.py`)."""
    parts = path.replace("\\", "/").rsplit("/", 2)
    return "/".join(parts[-2:]) if parts[-1] == "__init__.py" and len(parts) > 1 else parts[-1]
