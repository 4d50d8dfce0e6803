"""Every thread's Python stack, parsed from the dump faulthandler writes to stderr when a process dies.

faulthandler names threads only by their pthread id, so each thread is named here by what it runs:
the main thread runs the script's `<module>`; a `threading.Thread` runs its target, which is the first
frame of the user's own code above threading's bootstrap (e.g. `capture_frames`, not the main loop).

Each frame also records, at capture time, whether its source file exists on this machine and its
source line: code whose file is not here (a function cloudpickled elsewhere) is foreign, and a hang's
`with lock:` line says what its thread waits for. A report re-judged elsewhere keeps both answers.
"""

from __future__ import annotations

import linecache
import os
import re
import stat
from typing import Iterable, List, Optional

from envdoctor.crash import bounds, tracebacks

# The standard library (not site-packages): frames there are plumbing, not what a thread is "for".
STDLIB = re.compile(r"([/\\][Ll]ib[/\\]python\d+(\.\d+)?t?[/\\](?!(site|dist)-packages[/\\])|^<frozen )")
PACKAGES = re.compile(r"[/\\](site|dist)-packages[/\\]")
ENVDOCTOR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_CHARS = 200
SOURCE_FILE_BYTES = 4 << 20  # a larger "source" file is not read for one line
FAULTHANDLER_NAME_CHARS = 500  # faulthandler cuts longer names and appends "..."
ESCAPED = re.compile(r"\\x([0-9a-f]{2})|\\u([0-9a-f]{4})|\\U([0-9a-f]{8})")


def parse(text: str) -> Optional[dict]:
    """The last faulthandler dump in `text` (dumps of workers that died earlier may precede the
    command's own): the fatal error and each thread's frames, innermost first, and what it runs."""
    dump = tracebacks.parse(text)
    if not dump:
        return None
    dump["threads"], dump["threads_left_out"] = bounds.bounded(dump["threads"], bounds.python_key, bounds.python_marker, lambda t: t["current"])
    for thread in dump["threads"]:
        thread.update(describe(thread["frames"]))
        for frame in thread["frames"]:
            frame.update(located(frame))
    return dump


def located(frame: dict) -> dict:
    """`exists`: whether the frame's source file is on this machine (None for `<string>`, `<frozen ...>`
    and names faulthandler cut short); `source`: its stripped line, None when unreadable."""
    name = frame["file"]
    if name.startswith("<") or name == "???" or (len(name) > FAULTHANDLER_NAME_CHARS and name.endswith("...")):
        return {"exists": None, "source": None}
    path = local_file(name)
    return {"exists": path is not None, "source": source_line(path, frame["line"]) if path else None}


def local_file(name: str) -> Optional[str]:
    """The file a frame names, on this machine: faulthandler writes non-ASCII characters as escapes
    (`\\xe9`), so the unescaped name is tried too."""
    return next((path for path in dict.fromkeys((name, ESCAPED.sub(unescaped, name))) if os.path.exists(path)), None)


def unescaped(match: re.Match) -> str:
    code = int(next(group for group in match.groups() if group), 16)
    return chr(code) if code <= 0x10FFFF else match.group(0)


def source_line(path: str, number: Optional[int]) -> Optional[str]:
    """Line `number` of a regular file of modest size (a FIFO or a device is never opened)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if not number or not stat.S_ISREG(info.st_mode) or info.st_size > SOURCE_FILE_BYTES:
        return None
    text = linecache.getline(path, number).strip()
    return text[:SOURCE_CHARS] or None


def describe(frames: List[dict]) -> dict:
    """What a thread is: `main` (runs a script's module code), `worker` (a threading.Thread), or `other`."""
    frames = [f for f in frames if f["file"] != bounds.MARKER_FILE]  # what stands for left-out frames runs nothing
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
    return in_stdlib(path, [r for r in stdlib if r]) or path.startswith("<frozen ") or path == bounds.MARKER_FILE or under(path, ENVDOCTOR) or path in own


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
    where = f" running {entry.get('function')} ({short(entry['file'])}:{entry.get('line')})" if isinstance(entry, dict) and isinstance(entry.get("file"), str) else ""
    name = thread.get("native_name")
    named = f" “{name}”" if name else ""
    kind = {"main": "main thread", "worker": "worker thread"}.get(thread.get("kind"), "thread")
    return f"{kind}{named}{where}"


def short(path: str) -> str:
    """The file's name, with its folder when the name alone says nothing (`ctypes/__init__.py`)."""
    parts = path.replace("\\", "/").rsplit("/", 2)
    return "/".join(parts[-2:]) if parts[-1] == "__init__.py" and len(parts) > 1 else parts[-1]
