"""The one thin runner every child process goes through.

Target scripts, the NVML query, the probe ladder and `envdoctor run` all need the same things: their
own process group (so a timeout kills grandchildren too), a hard timeout, and an ending that is data.
A child killed by a signal is a *result* here, never an exception of the doctor.

`run_child` (output kept) and `stream_child` (output handed over line by line) wait on the child
themselves, so a timeout or a Ctrl-C ends its group; `start_child` hands a child to callers that watch
it while it runs and end it with `kill_group`.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, List, Mapping, Optional, Sequence, Set


@dataclass(frozen=True)
class ChildResult:
    """How a child process ended and what it wrote."""

    argv: tuple
    returncode: Optional[int]
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    start_error: str = ""

    @property
    def signal_number(self) -> Optional[int]:
        """The signal that killed the child (POSIX reports it as a negative return code)."""
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        return None

    @property
    def signal_name(self) -> Optional[str]:
        number = self.signal_number
        if number is None:
            return None
        try:
            return signal.Signals(number).name
        except ValueError:
            return f"signal {number}"

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.start_error

    def describe(self) -> str:
        """One line for a fact or an error message: how the child ended."""
        if self.start_error:
            return f"could not start: {self.start_error}"
        if self.timed_out:
            return f"timed out after {self.duration_s:.1f}s"
        if self.signal_name:
            return f"killed by {self.signal_name}"
        return f"exited with {self.returncode}"


def kill_group(process: subprocess.Popen) -> None:
    """Kill the child's whole process group; it may already be gone."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def start_child(argv: Sequence[str], *, env: Optional[Mapping[str, str]] = None, **popen) -> subprocess.Popen:
    """Start a child as the leader of a new process group and hand it back to be read and waited on.

    For callers that must watch a child while it runs (`envdoctor run`, samplers); `popen` are Popen's
    stream, cwd and text arguments. End it with `kill_group`. Raises OSError when it cannot start.
    """
    return subprocess.Popen(list(argv), env=None if env is None else dict(env), start_new_session=True, **popen)


# The children that run_child and stream_child are waiting on, so that an interrupt can end them all.
WAITED_ON: Set[subprocess.Popen] = set()
WAITED_ON_LOCK = threading.RLock()  # re-entrant: the SIGINT handler may run while its own thread holds it
INTERRUPTED = threading.Event()


def start_waited(argv: Sequence[str], env, cwd, *, stdin, stderr) -> subprocess.Popen:
    """`start_child` with text pipes, recorded for `end_waited_children` until `waited` lets it go.

    Refuses (OSError) once the doctor has been interrupted: a thread that has not noticed yet must not
    start the next bisection run or collector query."""
    with WAITED_ON_LOCK:
        if INTERRUPTED.is_set():
            raise OSError(errno.ECANCELED, "the doctor was interrupted")
        process = start_child(argv, env=env, cwd=cwd, stdin=stdin, stdout=subprocess.PIPE, stderr=stderr, text=True, errors="replace")
        WAITED_ON.add(process)
    return process


@contextmanager
def waited(process: subprocess.Popen) -> Iterator[None]:
    """Wrap the wait on a child from `start_waited`: a Ctrl-C caught here ends the child's whole group
    (it has its own session, so the terminal's SIGINT never reaches it) before the interrupt goes on."""
    try:
        yield
    except KeyboardInterrupt:
        kill_group(process)
        process.wait()
        raise
    finally:
        with WAITED_ON_LOCK:
            WAITED_ON.discard(process)


def end_waited_children() -> None:
    """Kill every child that run_child or stream_child is waiting on, in any thread, and start no more."""
    with WAITED_ON_LOCK:
        INTERRUPTED.set()
        for process in WAITED_ON:
            kill_group(process)


def interrupted() -> bool:
    """Whether an interrupt has ended the children; their endings then say nothing about the diagnosed stack."""
    return INTERRUPTED.is_set()


@contextmanager
def children_end_on_interrupt() -> Iterator[None]:
    """Around code whose threads wait on children (the probe ladder, its bisection, the collectors):
    Ctrl-C kills those children at once, so the threads return and the doctor can stop.

    Without this, a Ctrl-C reaches only the main thread, which then waits for its worker threads, which
    wait for children that never saw the signal: up to the probe's whole time limit, and its bisection.
    Only the main thread can install a signal handler; elsewhere, and where SIGINT is not Python's
    default handler (ignored, or already taken by a caller), the block runs unchanged.
    """
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is not signal.default_int_handler:
        yield
        return

    def interrupt(number: int, frame) -> None:
        end_waited_children()
        signal.default_int_handler(number, frame)

    signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        INTERRUPTED.clear()


def run_child(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Optional[Mapping[str, str]] = None,
    input_text: Optional[str] = None,
    cwd: Optional[str] = None,
) -> ChildResult:
    """Run `argv` in its own process group and return how it ended; never raises for the child's fate."""
    started = time.monotonic()
    try:
        process = start_waited(argv, env, cwd, stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL, stderr=subprocess.PIPE)
    except OSError as error:
        return ChildResult(tuple(argv), None, "", "", 0.0, start_error=str(error))
    with waited(process):
        try:
            stdout, stderr = process.communicate(input_text, timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_group(process)
            stdout, stderr = process.communicate()
            timed_out = True
    return ChildResult(
        argv=tuple(argv),
        returncode=process.returncode,
        stdout=stdout,
        stderr=stderr,
        duration_s=time.monotonic() - started,
        timed_out=timed_out,
    )


def stream_child(
    argv: Sequence[str],
    on_line: Callable[[str], None],
    *,
    timeout: float,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
) -> ChildResult:
    """Run `argv` like `run_child`, handing each line of its output (stderr merged) to `on_line` as it comes.

    For long installer runs and the probe ladder the user should see progress, and the result still keeps the whole output.
    """
    started = time.monotonic()
    try:
        process = start_waited(argv, env, cwd, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    except OSError as error:
        return ChildResult(tuple(argv), None, "", "", 0.0, start_error=str(error))
    lines: List[str] = []

    def pump() -> None:
        for line in process.stdout:
            lines.append(line)
            on_line(line.rstrip("\n"))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    with waited(process):
        try:
            process.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_group(process)
            process.wait()
            timed_out = True
    reader.join()
    return ChildResult(tuple(argv), process.returncode, "".join(lines), "", time.monotonic() - started, timed_out=timed_out)
