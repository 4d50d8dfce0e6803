"""Running the user's command: streams passed through live, signals forwarded, silence watched.

stdin is inherited untouched (interactive programs keep working). stdout and stderr are copied to the
doctor's own as each chunk arrives and kept in a bounded tail. The command gets its own session and
dies with the doctor, so the doctor forwards the signals a terminal would have sent it (Ctrl-C, a
scheduler's SIGTERM) to its whole process group and to the workers that left it, and can end a hung
command's whole tree. Processes the command leaves running when it ends are recorded and ended, so a
run leaves nothing behind. Python children get faulthandler (all threads) and unbuffered output, so
the last lines and the stacks reach the tail even when the process dies by a signal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import List, Mapping, Optional, Sequence, Tuple

from envdoctor.capture.gpu import GpuSampler
from envdoctor.capture.sampling import TreeSampler
from envdoctor.capture.tail import Tail
from envdoctor.proc.children import Child, descendants, end_processes, exited, kill_family, reap, signal_family, start_child
from envdoctor.proc.processes import psutil

CHILD_VARIABLES = {"PYTHONFAULTHANDLER": "1", "PYTHONUNBUFFERED": "1"}
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
HANG_GRACE_S = 10.0  # time for faulthandler (and gdb) to write every thread's stack before SIGKILL
DRAIN_S = 2.0  # grandchildren may keep the pipes open after the command itself has ended
LEFT_BEHIND_GRACE_S = 2.0  # between SIGTERM and SIGKILL for processes still running after the command ended
WAIT_POLL_S = 0.05
CMDLINE_CHARS = 300


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
    forwarded_to: List[int] = field(default_factory=list)  # how many processes each forwarded signal reached
    left_behind: List[dict] = field(default_factory=list)
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


def described(process: psutil.Process) -> dict:
    """pid, name and command line of a process, for the report."""
    try:
        with process.oneshot():
            name, cmdline = process.name(), " ".join(process.cmdline())
    except psutil.Error:
        name, cmdline = "?", ""
    return {"pid": process.pid, "name": name, "cmdline": cmdline[:CMDLINE_CHARS]}


def end_left_behind(process: Child) -> List[dict]:
    """The command's descendants still running after it ended: recorded, then ended (SIGTERM, a short
    grace, SIGKILL)."""
    left = descendants(process)
    records = [described(member) for member in left]
    stubborn = {member.pid for member in end_processes(left, LEFT_BEHIND_GRACE_S)}
    return [{**record, "ended_by": "SIGKILL" if record["pid"] in stubborn else "SIGTERM"} for record in records]


def inferior_pid(process: Child, under_gdb: bool) -> int:
    """The process that runs the user's program: the command itself, or gdb's child."""
    if not under_gdb:
        return process.program_pid
    try:
        children = psutil.Process(process.program_pid).children()
    except psutil.Error:
        children = []
    return children[0].pid if children else process.program_pid


def restore(handlers: Mapping[int, object]) -> None:
    for number, handler in handlers.items():
        signal.signal(number, handler)


class Supervisor:
    def __init__(self, argv: Sequence[str], settings: Settings, environ: Mapping[str, str]):
        self.settings = settings
        self.env, added = child_environment(environ)
        self.seen = Supervised(argv=tuple(argv), added_variables=added)
        self.process: Optional[Child] = None
        self.early: List[int] = []  # signals that came while the command was starting

    def run(self) -> Supervised:
        started = time.monotonic()
        previous = self.forward_signals()  # before the start: the command may be ready before the doctor is
        try:
            self.process = start_child(self.seen.argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as error:
            self.seen.start_error, self.seen.start_errno = error.strerror or str(error), error.errno or 0
            restore(previous)
            for number in self.early:  # to the doctor's own handling, as if it had never taken them
                os.kill(os.getpid(), number)
            return self.seen
        for number in self.early:
            self.forward(number, None)
        pumps = [
            threading.Thread(target=pump, args=(self.process.stdout, 1, "stdout", self.seen.tail), daemon=True),
            threading.Thread(target=pump, args=(self.process.stderr, 2, "stderr", self.seen.tail), daemon=True),
        ]
        for thread in pumps:
            thread.start()
        self.seen.sampler = TreeSampler(self.process.program_pid, started, self.settings.sample_interval)
        self.seen.gpu = GpuSampler(started, self.settings.sample_interval)
        self.seen.sampler.start()
        self.seen.gpu.start()
        try:
            self.wait()
            self.seen.duration_s = time.monotonic() - started
            self.seen.left_behind = end_left_behind(self.process)
        finally:
            kill_family(self.process)  # group members found by neither tree nor marker; everything, on an error of the doctor
            self.seen.returncode = reap(self.process)
            restore(previous)
            self.seen.sampler.stop()
            self.seen.gpu.stop()
            for thread in pumps:
                thread.join(timeout=DRAIN_S)
        return self.seen

    def wait(self) -> None:
        """Wait for the command to end, without reaping it (its process group stays addressable for what it
        left behind); past `hang_timeout` seconds without output, dump its stacks and end it."""
        limit = self.settings.hang_timeout
        while not exited(self.process):
            if limit is not None and self.seen.tail.silence_s() >= limit:
                self.end_hung()
                return
            self.process.await_end(WAIT_POLL_S)

    def end_hung(self) -> None:
        """SIGABRT makes faulthandler (and gdb) write every thread's stack; SIGKILL if that does not end it."""
        self.seen.hung = True
        try:
            os.kill(inferior_pid(self.process, self.settings.under_gdb), signal.SIGABRT)
        except OSError:
            pass
        deadline = time.monotonic() + HANG_GRACE_S
        while not exited(self.process) and time.monotonic() < deadline:
            time.sleep(WAIT_POLL_S)
        if not exited(self.process):
            kill_family(self.process)

    def forward_signals(self) -> dict:
        """Pass the signals a terminal or scheduler sends to the command (not to the doctor)."""
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous = {}
        for number in FORWARDED:
            previous[number] = signal.signal(number, self.forward)
        return previous

    def forward(self, number: int, _frame) -> None:
        """Under gdb only the program gets it (gdb would stop on it); otherwise the command's process group
        and every descendant that left it, each once. Before the command runs, kept for it."""
        if self.process is None:
            self.early.append(number)
            return
        self.seen.forwarded.append(number)
        self.seen.forwarded_to.append(self.send(number))

    def send(self, number: int) -> int:
        if not self.settings.under_gdb:
            return signal_family(self.process, number)
        try:
            os.kill(inferior_pid(self.process, True), number)
        except OSError:
            return 0
        return 1
