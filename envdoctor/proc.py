"""The one thin runner every child process goes through.

Target scripts, the NVML query, the probe ladder and `envdoctor run` all need the same things: their
own process group (so a timeout kills grandchildren too), a hard timeout, and an ending that is data.
A child killed by a signal is a *result* here, never an exception of the doctor.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Callable, List, Mapping, Optional, Sequence


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


def spawn_piped(argv: Sequence[str], env, cwd, *, stdin, stderr=subprocess.PIPE) -> subprocess.Popen:
    """Start `argv` as the leader of a new process group, with text pipes."""
    return subprocess.Popen(
        list(argv),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=None if env is None else dict(env),
        cwd=cwd,
        start_new_session=True,
        text=True,
        errors="replace",
    )


def start_child(argv: Sequence[str], *, env: Optional[Mapping[str, str]] = None, **streams) -> subprocess.Popen:
    """Start a long-running child in its own process group and hand it back to be read and waited on.

    For callers that must watch a child while it runs (`envdoctor run`, samplers); `streams` are
    Popen's stdin/stdout/stderr/cwd. End it with `kill_group`. Raises OSError when it cannot start.
    """
    return subprocess.Popen(list(argv), env=None if env is None else dict(env), start_new_session=True, **streams)


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
        process = spawn_piped(argv, env, cwd, stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL)
    except OSError as error:
        return ChildResult(tuple(argv), None, "", "", 0.0, start_error=str(error))
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

    For long installer runs the user should see progress, and the result still keeps the whole output.
    """
    started = time.monotonic()
    try:
        process = spawn_piped(argv, env, cwd, stdin=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    except OSError as error:
        return ChildResult(tuple(argv), None, "", "", 0.0, start_error=str(error))
    lines: List[str] = []

    def pump() -> None:
        for line in process.stdout:
            lines.append(line)
            on_line(line.rstrip("\n"))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        process.wait(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_group(process)
        process.wait()
        timed_out = True
    except KeyboardInterrupt:
        # The child has its own session, so Ctrl-C reaches only the doctor: end the child before giving up on it.
        kill_group(process)
        process.wait()
        raise
    reader.join()
    return ChildResult(tuple(argv), process.returncode, "".join(lines), "", time.monotonic() - started, timed_out=timed_out)
