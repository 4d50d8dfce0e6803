"""Progress lines while the probe runs, so a slow or hanging stage is visible as it happens.

A stage's line is started when it begins and finished when it ends; a crash leaves it open and the
next line says so. Bisection prints one line per variation as each finishes.
"""

from __future__ import annotations

from typing import Callable, Mapping

from envdoctor.probe import ladder


def words(status: str) -> str:
    """A stage status as the table shows it: "not run", not "not_run"."""
    return str(status).replace("_", " ")


class ProgressPrinter:
    """An `on_event` handler writing human lines through `write` (e.g. to stderr)."""

    def __init__(self, write: Callable[[str], None]):
        self.write = write
        self.open_line = False

    def __call__(self, event: Mapping) -> None:
        kind = event.get("event")
        if kind == "begin":
            self.finish()
            self.write(f"probe: {ladder.title(event['stage'])} … ")
            self.open_line = True
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
        if self.open_line:
            self.write(f"{text}\n")
            self.open_line = False
