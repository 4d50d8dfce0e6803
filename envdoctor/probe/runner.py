"""Running the ladder in a child process under the diagnosed interpreter, then bisecting what failed.

The child is the only place torch, numpy and SB3 are ever loaded. It has its own process group, a
hard timeout (plus a grace period for its own faulthandler watchdog to dump the stacks first),
`-X faulthandler`, and unbuffered output; its events arrive line by line, so progress can be shown
while it runs and a crash is pinned to the stage that was announced last.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Callable, List, Mapping, Optional

from envdoctor.probe import ladder
from envdoctor.probe.classify import classify
from envdoctor.probe.result import ProbeResult
from envdoctor.proc import stream_child
from envdoctor.target import script_path

MARK = "@envdoctor-probe "
DEFAULT_TIMEOUT_S = 300.0
# The child's watchdog fires at the deadline and needs a moment to dump every thread and exit.
GRACE_S = 10.0

EventHandler = Callable[[Mapping], None]


@dataclass(frozen=True)
class ProbeOptions:
    """How to probe: the overall time limit, the device for the model, whether to bisect a failure,
    and who hears about progress (events: plan, begin, end, done, bisect, variation)."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    device: str = "auto"
    bisect: bool = True
    on_event: Optional[EventHandler] = None


def ladder_argv(python: str, timeout_s: float, device: str, until: Optional[str]) -> List[str]:
    """`-c` keeps the script's folder off the target's sys.path."""
    source = script_path("ladder").read_text(encoding="utf-8")
    argv = [python, "-X", "faulthandler", "-c", source, "--device", device, "--deadline", str(timeout_s), "--limits", json.dumps(ladder.limits())]
    return argv + (["--until", until] if until else [])


class EventReader:
    """Splits the child's merged output into ladder events and everything else."""

    def __init__(self, on_event: Optional[EventHandler]):
        self.started = time.monotonic()
        self.events: List[dict] = []
        self.output: List[str] = []
        self.on_event = on_event

    def __call__(self, line: str) -> None:
        at = line.find(MARK)
        event = None
        if at >= 0:
            try:
                event = json.loads(line[at + len(MARK):])
            except ValueError:
                event = None
        if event is None:
            self.output.append(line)
            return
        if at:
            self.output.append(line[:at])
        event["at_s"] = time.monotonic() - self.started
        self.events.append(event)
        if self.on_event:
            self.on_event(event)


def run_ladder(python: str, environ: Mapping[str, str], options: ProbeOptions, until: Optional[str] = None, on_event: Optional[EventHandler] = None) -> ProbeResult:
    """One run of the ladder (up to `until`, when given) with exactly the environment `environ`."""
    env = {**environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
    reader = EventReader(on_event)
    child = stream_child(ladder_argv(python, options.timeout_s, options.device, until), reader, timeout=options.timeout_s + GRACE_S, env=env)
    return classify(reader.events, child, "\n".join(reader.output), python, until)

