"""The Python exception a command died of, read from the traceback the interpreter printed on stderr.

The last "Traceback (most recent call last):" block is the one that ended the process (earlier ones
were handled and printed, or belong to the chained causes above it). Other processes writing to the
same stderr (DataLoader workers that crash, faulthandler's dumps) can cut into it: a line that is not
indented but comes before the block's last frame is theirs, and so is one that cannot be an exception
line ("Fatal Python error: ...") and a NUL byte. A SyntaxError's own place (the
file and line that did not compile, printed after the frames that imported it) is its innermost frame. Frames are kept innermost first,
as faulthandler's are, so the same frame rules apply to both.
"""

from __future__ import annotations

import re
from typing import List, Optional

HEADER = "Traceback (most recent call last):"
FRAME = re.compile(r'^  File "(?P<file>.*)", line (?P<line>\d+), in (?P<function>.*)$')
# Where a SyntaxError is: the line of the file that did not compile, after the frames that imported it.
SOURCE_AT = re.compile(r'^  File "(?P<file>.*)", line (?P<line>\d+)$')
EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")
MAX_FRAMES = 50
MAX_MESSAGE_LINES = 20
MAX_MESSAGE_CHARS = 4000


def last_exception(stderr: str) -> Optional[dict]:
    """{"type", "message", "frames": [{file, line, function}] innermost first} of the last traceback that
    is whole, or None: a worker can start printing its own after the failing process's and be cut off
    when the run ends."""
    end = len(stderr)
    while True:
        at = stderr.rfind(HEADER, 0, end)
        if at < 0:
            return None
        found = exception_in(stderr[at + len(HEADER):end])
        if found is not None:
            return found
        end = at


def exception_in(block: str) -> Optional[dict]:
    """The exception one traceback block (what follows its header, up to the next one) ends in, or None."""
    lines = block.replace("\0", "").splitlines()[1:]
    last_frame = max((i for i, line in enumerate(lines) if FRAME.match(line) or SOURCE_AT.match(line)), default=-1)
    frames: List[dict] = []
    index = 0
    while index < len(lines) and (index <= last_frame or lines[index].startswith(" ") or not EXCEPTION.match(lines[index])):
        match = FRAME.match(lines[index])
        if match:
            frames.append({"file": match.group("file"), "line": int(match.group("line")), "function": match.group("function").strip()})
        compiled = SOURCE_AT.match(lines[index])
        if compiled:
            frames.append({"file": compiled.group("file"), "line": int(compiled.group("line")), "function": "<compile>"})
        index += 1
    found = EXCEPTION.match(lines[index]) if index < len(lines) else None
    if not found:
        return None
    message = [found.group("message") or ""] + lines[index + 1 : index + MAX_MESSAGE_LINES]
    return {
        "type": found.group("type"),
        "message": "\n".join(message).strip()[:MAX_MESSAGE_CHARS],
        "frames": frames[::-1][:MAX_FRAMES],
    }
