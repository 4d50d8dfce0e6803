"""The command's standard output and its one-line notes on stderr: a broken stream loses output, never
the command's result. Kept apart from the options so that the entry point (and `--version`) loads
nothing but this."""

from __future__ import annotations

import os
import sys


class GuardedStdout:
    """stdout for a command's run. A closed, full or broken stdout loses the output, not the
    command's result: the first failed write is noted in one line on stderr, the rest of the output
    goes to the null device, and the command still ends with its own exit code."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")  # click probes for a text stream
        try:
            if self.stream is None:
                raise OSError(0, "it is closed")
            return self.stream.write(text)
        except (OSError, ValueError) as error:
            self.lost(error)
            return len(text)

    def flush(self) -> None:
        try:
            if self.stream is not None:
                self.stream.flush()
        except (OSError, ValueError) as error:
            self.lost(error)

    def isatty(self) -> bool:
        return self.stream is not None and self.stream.isatty()

    def __getattr__(self, name: str):
        return getattr(self.stream, name)

    def lost(self, error: Exception) -> None:
        """Note the loss, then point file descriptor 1 at the null device, so that what is still
        buffered, flushed at interpreter exit, fails no more."""
        note(f"envdoctor: output not written: standard output is unusable ({getattr(error, 'strerror', None) or error})")
        null = os.open(os.devnull, os.O_WRONLY)
        if self.stream is not None:
            try:
                os.dup2(null, self.stream.fileno())
            except (OSError, ValueError):
                pass
        self.stream = os.fdopen(null, "w", encoding="utf-8")


def note(line: str) -> None:
    """One line on stderr, or nothing when stderr is closed or broken too."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
