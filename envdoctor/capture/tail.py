"""The last part of the command's output, kept while it streams through to the user's terminal.

Two views of the same bytes: the recent lines of both streams in arrival order (what the report
shows), and a larger raw tail of stderr (where faulthandler and gdb write the stacks to parse). The
time of the last output is what the hang watchdog measures silence against.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Deque, Dict, List, Tuple

MAX_LINE_CHARS = 2000


class Tail:
    """A bounded record of recent output; `feed` is called from one reader thread per stream."""

    def __init__(self, max_lines: int = 200, max_raw_bytes: int = 1 << 20):
        self.lines: Deque[Tuple[str, str]] = deque(maxlen=max_lines)
        self.partial: Dict[str, bytes] = {"stdout": b"", "stderr": b""}
        self.raw_stderr = bytearray()
        self.max_raw_bytes = max_raw_bytes
        self.last_output = time.monotonic()
        self.lock = threading.Lock()

    def feed(self, stream: str, data: bytes) -> None:
        with self.lock:
            self.last_output = time.monotonic()
            if stream == "stderr":
                self.raw_stderr += data
                del self.raw_stderr[: max(0, len(self.raw_stderr) - self.max_raw_bytes)]
            *complete, rest = (self.partial[stream] + data).split(b"\n")
            self.partial[stream] = rest[-MAX_LINE_CHARS * 4 :]
            for line in complete:
                self.lines.append((stream, shown(line)))

    def silence_s(self) -> float:
        with self.lock:
            return time.monotonic() - self.last_output

    def recent(self) -> List[dict]:
        """Recent lines, oldest first, including each stream's unfinished last line."""
        with self.lock:
            lines = list(self.lines) + [(s, shown(p)) for s, p in self.partial.items() if p]
        return [{"stream": stream, "text": text} for stream, text in lines]

    def stderr_text(self) -> str:
        with self.lock:
            return self.raw_stderr.decode("utf-8", errors="replace")


def shown(line: bytes) -> str:
    """What a terminal shows of a line: progress bars redraw with \\r, so only the last redraw counts."""
    text = line.decode("utf-8", errors="replace").rstrip("\r").rsplit("\r", 1)[-1]
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + "…"
