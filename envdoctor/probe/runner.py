"""Running the ladder in a child process under the diagnosed interpreter, then bisecting what failed.

The child is the only place torch, numpy and SB3 are ever loaded. It has its own process group, a
hard timeout (plus a grace period for its own faulthandler watchdog to dump the stacks first),
`-X faulthandler`, and unbuffered output; its events arrive line by line, so progress can be shown
while it runs and a crash is pinned to the stage that was announced last. The child's CPU time is
sampled while it runs, so a stage ended at its time limit is told apart: still working (slow) or idle (hung).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Deque, List, Mapping, Optional, Tuple

from envdoctor.probe import ladder
from envdoctor.probe.classify import classify
from envdoctor.probe.result import ProbeResult
from envdoctor.proc.children import NO_BYTECODE, stream_child
from envdoctor.proc import processes
from envdoctor.target import script_source
from envdoctor.target.ladder import MARK

if TYPE_CHECKING:
    from psutil import Process

DEFAULT_TIMEOUT_S = 300.0
# The child's watchdog fires at the deadline and needs a moment to dump every thread and exit.
GRACE_S = 10.0
SAMPLE_S = 0.25
# The last seconds of a stage that decide whether it was still working when its limit ended.
RECENT_S = 2.0

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
    """`-c` keeps the script's folder off the target's sys.path. A timeout above the default raises
    every stage's own limit by as much, so --probe-timeout really gives a slow stage more time."""
    source = script_source("ladder")
    limits = ladder.limits(timeout_s - DEFAULT_TIMEOUT_S)
    argv = [python, NO_BYTECODE, "-X", "faulthandler", "-c", source, "--device", device, "--deadline", str(timeout_s), "--limits", json.dumps(limits)]
    return argv + (["--until", until] if until else [])


class CpuClock:
    """The child's CPU seconds, sampled while it runs; times are seconds since `started`."""

    def __init__(self, started: float):
        self.started = started
        self.samples: Deque[Tuple[float, float]] = deque(maxlen=int(RECENT_S / SAMPLE_S) + 2)
        self.process: Optional[Process] = None
        self.stopped = threading.Event()

    def watch(self, pid: int) -> None:
        try:
            self.process = processes.psutil.Process(pid)
        except (processes.psutil.Error, ValueError, TypeError):
            return
        threading.Thread(target=self.sample_until_stopped, name="probe-cpu-clock", daemon=True).start()

    def read(self) -> Optional[float]:
        try:
            times = self.process.cpu_times() if self.process else None
        except processes.psutil.Error:
            return None
        return times.user + times.system if times else None

    def sample_until_stopped(self) -> None:
        while not self.stopped.wait(SAMPLE_S):
            value = self.read()
            if value is not None:
                self.samples.append((time.monotonic() - self.started, value))

    def activity(self) -> Optional[dict]:
        """{cpu_s: the child's CPU time at the last sample, share: of one CPU over its last RECENT_S}, or None unsampled."""
        self.stopped.set()
        if len(self.samples) < 2:
            return None
        (first_at, first_cpu), (last_at, last_cpu) = self.samples[0], self.samples[-1]
        return {"cpu_s": last_cpu, "share": (last_cpu - first_cpu) / max(last_at - first_at, SAMPLE_S)}


class EventReader:
    """Splits the child's merged output into ladder events and everything else."""

    def __init__(self, on_event: Optional[EventHandler]):
        self.started = time.monotonic()
        self.clock = CpuClock(self.started)
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
        self.time_cpu(event)
        self.events.append(event)
        if self.on_event:
            self.on_event(event)

    def time_cpu(self, event: dict) -> None:
        """The plan names the child's pid for its clock; each stage notes the CPU time it began at."""
        if event.get("event") == "plan" and isinstance(event.get("pid"), int):
            self.clock.watch(event["pid"])
        elif event.get("event") == "begin":
            event["cpu_s"] = self.clock.read()


def run_ladder(python: str, environ: Mapping[str, str], options: ProbeOptions, until: Optional[str] = None, on_event: Optional[EventHandler] = None) -> ProbeResult:
    """One run of the ladder (up to `until`, when given) with exactly the environment `environ`."""
    env = {**environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
    reader = EventReader(on_event)
    child = stream_child(ladder_argv(python, options.timeout_s, options.device, until), reader, timeout=options.timeout_s + GRACE_S, env=env)
    return classify(reader.events, child, "\n".join(reader.output), python, until, reader.clock.activity())

