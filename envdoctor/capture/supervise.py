"""Running the user's command: streams passed through live, signals forwarded, silence watched.

stdin is inherited untouched (interactive programs keep working). stdout and stderr are copied to the
doctor's own as each chunk arrives and kept in a bounded tail. The command gets its own process group,
so the doctor forwards the signals a terminal would have sent it (Ctrl-C, a scheduler's SIGTERM) and
can end a hung command's whole tree. Python children get faulthandler (all threads) and unbuffered
output, so the last lines and the stacks reach the tail even when the process dies by a signal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import List, Mapping, Optional, Sequence, Tuple

import psutil

from envdoctor.capture.gpu import GpuSampler
from envdoctor.capture.sampling import TreeSampler
from envdoctor.capture.tail import Tail
from envdoctor.proc import kill_group, start_child

CHILD_VARIABLES = {"PYTHONFAULTHANDLER": "1", "PYTHONUNBUFFERED": "1"}
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
HANG_GRACE_S = 10.0  # time for faulthandler (and gdb) to write every thread's stack before SIGKILL
DRAIN_S = 2.0  # grandchildren may keep the pipes open after the command itself has ended


@dataclass(frozen=True)
class Settings:
    hang_timeout: Optional[float] = None
    sample_interval: float = 0.5
    under_gdb: bool = False


@dataclass
class Supervised:
    """What was seen of one run of the command."""

    argv: Tuple[str, ...]
    returncode: Optional[int] = None
    start_error: str = ""
    start_errno: int = 0
    hung: bool = False
    forwarded: List[int] = field(default_factory=list)
    duration_s: float = 0.0
    added_variables: Mapping[str, str] = field(default_factory=dict)
    tail: Tail = field(default_factory=Tail)
    sampler: Optional[TreeSampler] = None
    gpu: Optional[GpuSampler] = None


def child_environment(environ: Mapping[str, str]) -> Tuple[dict, dict]:
    """The command's environment, and the variables the doctor added (never overriding the user's)."""
    added = {k: v for k, v in CHILD_VARIABLES.items() if k not in environ}
    return {**environ, **added}, added


def pump(source, target_fd: int, stream: str, tail: Tail) -> None:
    """Copy one pipe to the doctor's own stream; if that goes away (`| head`), keep draining."""
    writable = True
    fd = source.fileno()
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        tail.feed(stream, data)
        while writable and data:
            try:
                data = data[os.write(target_fd, data):]
            except OSError:
                writable = False


def inferior_pid(process: subprocess.Popen, under_gdb: bool) -> int:
    """The process that runs the user's program: the command itself, or gdb's child."""
    if not under_gdb:
        return process.pid
    try:
        children = psutil.Process(process.pid).children()
    except psutil.Error:
        children = []
    return children[0].pid if children else process.pid


class Supervisor:
    def __init__(self, argv: Sequence[str], settings: Settings, environ: Mapping[str, str]):
        self.settings = settings
        self.env, added = child_environment(environ)
        self.seen = Supervised(argv=tuple(argv), added_variables=added)
        self.process: Optional[subprocess.Popen] = None

    def run(self) -> Supervised:
        started = time.monotonic()
        try:
            self.process = start_child(self.seen.argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as error:
            self.seen.start_error, self.seen.start_errno = error.strerror or str(error), error.errno or 0
            return self.seen
        pumps = [
            threading.Thread(target=pump, args=(self.process.stdout, 1, "stdout", self.seen.tail), daemon=True),
            threading.Thread(target=pump, args=(self.process.stderr, 2, "stderr", self.seen.tail), daemon=True),
        ]
        for thread in pumps:
            thread.start()
        self.seen.sampler = TreeSampler(self.process.pid, started, self.settings.sample_interval)
        self.seen.gpu = GpuSampler(started, self.settings.sample_interval)
        self.seen.sampler.start()
        self.seen.gpu.start()
        previous = self.forward_signals()
        try:
            self.seen.returncode = self.wait()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
            self.seen.duration_s = time.monotonic() - started
            self.seen.sampler.stop()
            self.seen.gpu.stop()
            for thread in pumps:
                thread.join(timeout=DRAIN_S)
        return self.seen

    def wait(self) -> int:
        """Wait for the command; past `hang_timeout` seconds without output, dump its stacks and end it."""
        limit = self.settings.hang_timeout
        while True:
            step = 1.0 if limit is None else max(0.05, min(1.0, limit - self.seen.tail.silence_s()))
            try:
                return self.process.wait(timeout=step)
            except subprocess.TimeoutExpired:
                pass
            if limit is not None and self.seen.tail.silence_s() >= limit:
                return self.end_hung()

    def end_hung(self) -> int:
        """SIGABRT makes faulthandler (and gdb) write every thread's stack; SIGKILL if that does not end it."""
        self.seen.hung = True
        try:
            os.kill(inferior_pid(self.process, self.settings.under_gdb), signal.SIGABRT)
        except OSError:
            pass
        try:
            return self.process.wait(timeout=HANG_GRACE_S)
        except subprocess.TimeoutExpired:
            kill_group(self.process)
            return self.process.wait()
        finally:
            kill_group(self.process)  # its workers, left behind by the ended command

    def forward_signals(self) -> dict:
        """Pass the signals a terminal or scheduler sends to the command (not to the doctor)."""
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous = {}
        for number in FORWARDED:
            previous[number] = signal.signal(number, self.forward)
        return previous

    def forward(self, number: int, _frame) -> None:
        self.seen.forwarded.append(number)
        try:
            if self.settings.under_gdb:
                os.kill(inferior_pid(self.process, True), number)
            else:
                os.killpg(self.process.pid, number)
        except OSError:
            pass
