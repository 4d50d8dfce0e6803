"""Progress lines while the probe runs, so a slow or hanging stage is visible as it happens.

A stage's line is started when it begins and finished when it ends; a crash leaves it open and the
next line says so. Bisection prints one line per variation as each finishes. On a terminal a running
clock ticks on the open line, so importing torch or building MaskablePPO never sits silent for seconds.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Mapping, Optional

from envdoctor.probe import ladder


def words(status: str) -> str:
    """A stage status as the table shows it: "not run", not "not_run"."""
    return str(status).replace("_", " ")


class Clock:
    """Rewrites `prefix` followed by the seconds since it started every `tick` seconds, until stopped."""

    def __init__(self, write: Callable[[str], None], prefix: str, lock: threading.Lock, tick: float):
        self.write, self.prefix, self.lock, self.tick = write, prefix, lock, tick
        self.started = time.monotonic()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, name="envdoctor-progress-clock", daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stopped.wait(self.tick):
            with self.lock:
                if not self.stopped.is_set():
                    self.write(f"\r{self.prefix}{time.monotonic() - self.started:.0f} s")

    def stop(self) -> None:
        """Stop ticking and bring the cursor back to the end of the prefix, the rest of the line erased."""
        self.stopped.set()
        self.thread.join()
        with self.lock:
            self.write(f"\r{self.prefix}\x1b[K")


class ProgressPrinter:
    """An `on_event` handler writing human lines through `write` (e.g. to stderr); `live` (a terminal)
    adds the running clock."""

    def __init__(self, write: Callable[[str], None], live: bool = False, tick: float = 1.0):
        self.lock = threading.Lock()
        self.raw_write = write
        self.live, self.tick = live, tick
        self.open_line = False
        self.clock: Optional[Clock] = None

    def write(self, text: str) -> None:
        with self.lock:  # the clock's thread writes too
            self.raw_write(text)

    def stop_clock(self) -> None:
        if self.clock is not None:
            self.clock.stop()
            self.clock = None

    def __call__(self, event: Mapping) -> None:
        kind = event.get("event")
        if kind != "begin":
            self.stop_clock()
        if kind == "begin":
            self.finish()
            prefix = f"probe: {ladder.title(event['stage'])} … "
            self.write(prefix)
            self.open_line = True
            if self.live:
                self.clock = Clock(self.raw_write, prefix, self.lock, self.tick)
        elif kind == "end":
            status = words(event["status"])
            seconds = f" ({event.get('reason')})" if status == "skipped" else f" {event.get('duration_s', 0.0):.2f} s"
            if not self.open_line:
                self.write(f"probe: {ladder.title(event['stage'])} … ")
            self.write(f"{status}{seconds}\n")
            self.open_line = False
        elif kind == "died":
            if not self.open_line:
                self.write(f"probe: {ladder.title(event['stage'])} … ")
            self.write(f"{words(event['status'])} ({event['reason']})\n")
            self.open_line = False
        elif kind == "bisect":
            self.write(f"probe: bisecting {ladder.title(event['stage'])} with {len(event['variations'])} variations …\n")
        elif kind == "variation":
            self.write(f"probe:   {event['command']}: {event['outcome']} ({event['summary']})\n")
        elif kind == "done":
            self.finish()

    def finish(self, text: str = "") -> None:
        self.stop_clock()
        if self.open_line:
            self.write(f"{text}\n")
            self.open_line = False
