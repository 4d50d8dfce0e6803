"""The one thin runner every child process goes through.

Target scripts, the NVML query, the probe ladder and `envdoctor run` all need the same things: their
own session (so a timeout or a forwarded signal reaches their whole process group), a hard time limit
that nothing the child leaves behind can stretch, an ending that is data, and no survivors: a child
dies with the doctor (even a SIGKILLed one), and what it started is found and ended with it. A child
killed by a signal is a *result* here, never an exception of the doctor.

Every child runs under an intermediary (`subreaper.py`): its parent is never the doctor, so foreign
code that kills its parent ends only itself, and the intermediary, a sub-reaper, keeps what the child
orphans in the family. Every child also carries a marker variable that its descendants inherit, so
those that leave its process group (`setsid`, a daemon's double fork) are still found, by the marker
in /proc/PID/environ.

`run_child` (output kept) and `stream_child` (output handed over line by line) wait on the child
themselves, so a timeout or a Ctrl-C ends its family; `start_child` hands a child to callers that
watch it while it runs and end it with `kill_family`.
"""

from __future__ import annotations

import errno
import os
import select
import selectors
import signal
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set

from envdoctor import package_data
from envdoctor.proc import processes

if TYPE_CHECKING:
    from psutil import Process

MARKER_VARIABLE = "ENVDOCTOR_CHILD"
# Given to an interpreter the doctor only looks at (its facts, the probe, the imports, pip's version and
# dry run): the look writes no bytecode into the user's environment, whose files change only when asked.
NO_BYTECODE = "-B"
# After the child has ended, how long output may still arrive from descendants that share its pipes.
DRAIN_S = 1.0
POLL_S = 0.1  # how often a wait with quiet pipes looks whether the child has ended
CLOSED_POLL_S = 0.01  # the same once every pipe is closed: the child is about to end
CHUNK = 65536
KEPT_BYTES = 8 << 20  # of each stream's output, the first and the last this many bytes are kept
LONGEST_LINE = 1 << 20  # a streamed line without its end this long is handed over as it is
KILL_ROUNDS = 5  # a family that forks while it is being killed is looked for again
REAP_S = 5.0  # a SIGKILLed child stuck in the kernel (a hung driver call) is not waited on longer
START_S = 30.0  # for the intermediary's interpreter to start and report the program running, on a loaded machine
SUBREAPER_SOURCE = package_data.read_text("envdoctor.proc", "subreaper.py")

Sink = Callable[[bytes], None]


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
    # The intermediary was killed before it could report the program's end: by the program (or a
    # descendant), which then died of its parent-death signal; `returncode` is the intermediary's.
    parent_killed: bool = False

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


class Child(subprocess.Popen):
    """A child process started through the intermediary (`subreaper.py`), and the marker its
    descendants inherit.

    `pid` is the intermediary's: its process group and session are the program's, and signals to it
    reach the program through them. `program_pid` is the program's own pid; `program_returncode` how
    the program ended, as the intermediary reported it, or (when the intermediary itself was killed,
    by the program or by a time limit) how the intermediary ended."""

    def __init__(self, argv: List[str], marker: str, *, env: Mapping[str, str], **popen):
        self.marker = marker
        self.program_argv = tuple(argv)
        self.reported: Optional[int] = None
        self.tree_reaped = False
        reports, report = os.pipe()
        ctype = env.get("LC_CTYPE")
        intermediary = [sys.executable, "-I", "-S", "-c", SUBREAPER_SOURCE, str(report), str(os.getpid()), "-" if ctype is None else "=" + ctype, *argv]
        try:
            super().__init__(intermediary, env=env, pass_fds=(report,), **popen)
        except BaseException:
            os.close(reports)
            raise
        finally:
            os.close(report)
        self.reports = reports
        self.buffered = b""
        self.program_pid: Optional[int] = None
        self.start_errno: Optional[int] = None
        self.started()

    def started(self) -> None:
        """Wait until the intermediary reports the program running; OSError, as Popen raises it, when
        the program could not start."""
        deadline = time.monotonic() + START_S
        while self.program_pid is None and self.start_errno is None and self.reports >= 0 and time.monotonic() < deadline:
            self.read_reports(deadline - time.monotonic())
        if self.program_pid is not None:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)  # an intermediary that never reported is not waited on again
        except OSError:
            pass
        self.wait()
        self.close_reports()
        if self.start_errno is not None:
            raise OSError(self.start_errno, os.strerror(self.start_errno), self.program_argv[0])
        raise OSError(errno.ECHILD, f"the intermediary under {sys.executable} {describe_code(self.returncode)} before starting {self.program_argv[0]}")

    def read_reports(self, wait_s: float) -> bool:
        """Take in what the intermediary has reported, waiting up to `wait_s` for the first of it;
        whether there was anything to read."""
        poller = select.poll()
        poller.register(self.reports, select.POLLIN)
        if not poller.poll(max(wait_s, 0) * 1000):
            return False
        chunk = os.read(self.reports, 256)
        if not chunk:
            self.close_reports()
        self.buffered += chunk
        while b"\n" in self.buffered:
            line, _, self.buffered = self.buffered.partition(b"\n")
            kind, _, number = line.decode().partition(" ")
            if kind == "R":
                self.tree_reaped = True
            elif kind == "S":
                self.program_pid = int(number)
            elif kind == "E":
                self.start_errno = int(number)
            elif kind == "X":
                self.reported = int(number)
        return True

    def nothing_left(self) -> bool:
        """Whether the intermediary has reported every process of the program's tree reaped (read
        without waiting): then no descendant can be alive anywhere, and none needs looking for."""
        while not self.tree_reaped and self.reports >= 0 and self.read_reports(0):
            pass
        return self.tree_reaped

    def program_ended(self) -> bool:
        """Whether the intermediary has reported the program's end (without waiting)."""
        if self.reported is None and self.reports >= 0:
            self.read_reports(0)
        return self.reported is not None

    def await_end(self, wait_s: float) -> None:
        """Wait up to `wait_s` for the intermediary's next word (the program's end, or its own end,
        which closes the pipe): a wait that wakes when the program ends, not at the next tick."""
        if self.reported is None and self.reports >= 0:
            self.read_reports(wait_s)
        else:
            time.sleep(wait_s)

    @property
    def program_returncode(self) -> Optional[int]:
        self.program_ended()
        return self.returncode if self.reported is None else self.reported

    def close_reports(self) -> None:
        if self.reports >= 0:
            os.close(self.reports)
            self.reports = -1


def describe_code(returncode: Optional[int]) -> str:
    if returncode is not None and returncode < 0:
        return f"was killed by signal {-returncode}"
    return f"exited with {returncode}"


def start_child(argv: Sequence[str], *, env: Optional[Mapping[str, str]] = None, **popen) -> Child:
    """Start a child as the leader of a new session, dying with the doctor, and hand it back to be read
    and waited on.

    For callers that must watch a child while it runs (`envdoctor run`, samplers); `popen` are Popen's
    stream, cwd and text arguments. End it with `kill_family`. Raises OSError when it cannot start.
    """
    marker = uuid.uuid4().hex
    environment = {**(os.environ if env is None else env), MARKER_VARIABLE: marker}
    return Child(list(argv), marker, env=environment, start_new_session=True, **popen)


def marked(marker: str) -> List[int]:
    """The processes whose environment carries `marker`, wherever they now hang in the process tree."""
    needle = f"{MARKER_VARIABLE}={marker}\0".encode()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    pids = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as stream:
                if needle in stream.read():
                    pids.append(int(name))
        except OSError:
            continue
    return pids


def alive(process: Process) -> bool:
    """Running or stopped; a zombie has ended (its parent, maybe a non-reaping init, just has not waited)."""
    try:
        return process.status() != processes.psutil.STATUS_ZOMBIE
    except processes.psutil.Error:
        return False


def family(child: Child) -> List[Process]:
    """The child (while it lives) and every live descendant: those still under it, and those that
    carry its marker after leaving it, with everything under them."""
    found: Dict[int, Process] = {}
    for pid in [child.pid] + marked(child.marker):
        try:
            root = processes.psutil.Process(pid)
            for member in [root] + root.children(recursive=True):
                found.setdefault(member.pid, member)
        except processes.psutil.Error:
            continue
    return [process for process in found.values() if alive(process)]


def descendants(child: Child) -> List[Process]:
    """The child's live family without the child itself."""
    return [process for process in family(child) if process.pid != child.pid]


def signal_family(child: Child, number: int) -> int:
    """Send `number` to the child's process group and, once, to every member of its family outside
    that group; return how many live processes of the program's it was sent to (the intermediary,
    which ignores what it need not obey, is not counted)."""
    members = []
    for member in family(child):
        try:
            members.append((member, os.getpgid(member.pid)))  # asked before the signal: a member may end at once
        except OSError:
            continue
    try:
        os.killpg(child.pid, number)
    except OSError:
        pass
    reached = 0
    for member, group in members:
        if group != child.pid:
            try:
                member.send_signal(number)
            except processes.psutil.Error:
                continue
        reached += member.pid != child.pid
    return reached


def kill_family(child: Child) -> None:
    """SIGKILL the child's process group and its whole family, again while new members turn up."""
    for _ in range(KILL_ROUNDS):
        if not signal_family(child, signal.SIGKILL):
            return


def end_processes(ending: Sequence[Process], grace_s: float) -> List[Process]:
    """SIGTERM each, give them `grace_s` to exit, SIGKILL the rest; return the ones that needed SIGKILL."""
    for process in ending:
        try:
            process.terminate()
        except processes.psutil.Error:
            pass
    deadline = time.monotonic() + grace_s
    living = [process for process in ending if alive(process)]
    while living and time.monotonic() < deadline:
        time.sleep(0.05)
        living = [process for process in living if alive(process)]
    for process in living:
        try:
            process.kill()
        except processes.psutil.Error:
            pass
    return living


def exited(child: Child) -> bool:
    """Whether the child's program has ended (as its intermediary reported), or the intermediary itself,
    without reaping it: until it is reaped its pid, and so its process group id, cannot name another
    process, so `kill_family` still reaches the right group."""
    if child.returncode is not None or child.program_ended():
        return True
    try:
        return os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def reap(child: Child) -> Optional[int]:
    """Wait for an ended or killed child and return its program's return code; one stuck in the kernel
    (a hung driver call) is not waited on longer than REAP_S, and has none."""
    try:
        child.wait(timeout=REAP_S)
    except subprocess.TimeoutExpired:
        child.close_reports()
        return None
    code = child.program_returncode
    child.close_reports()
    return code


def read_pipes(child: Child, sinks: Mapping[int, Sink], deadline: float) -> bool:
    """Hand what each pipe brings to its sink until the child has ended and every pipe is closed, or the
    deadline passes, or DRAIN_S after the child ended: a descendant that keeps a pipe open cannot
    stretch the wait. Returns whether the child was still running when the wait ended."""
    ended_at: Optional[float] = None
    with selectors.DefaultSelector() as selector:
        for fd, sink in sinks.items():
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ, sink)
        while True:
            now = time.monotonic()
            if ended_at is None and exited(child):
                ended_at = now
            open_pipes = bool(selector.get_map())
            end = deadline if ended_at is None else min(deadline, ended_at + DRAIN_S)
            if (ended_at is not None and not open_pipes) or now >= end:
                return ended_at is None
            for key, _ in selector.select(min(POLL_S if open_pipes else CLOSED_POLL_S, end - now)):
                try:
                    data = os.read(key.fd, CHUNK)
                except BlockingIOError:
                    continue
                if data:
                    key.data(data)
                else:
                    selector.unregister(key.fd)


class Kept:
    """A stream's output, bounded: the beginning (a JSON answer, a version line) and the end (a crash's
    stack dump, an installer's verdict) of a child that writes without end."""

    def __init__(self, limit: int = KEPT_BYTES):
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.left_out = 0

    def feed(self, data: bytes) -> None:
        room = self.limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        excess = len(self.tail) - self.limit
        if excess > 0:
            del self.tail[:excess]
            self.left_out += excess

    def text(self) -> str:
        gap = f"\n[... {self.left_out} bytes left out ...]\n".encode() if self.left_out else b""
        return decode(self.head + gap + self.tail)


def decode(data: bytes) -> str:
    """Child output as text, newlines normalised as text-mode pipes would."""
    return bytes(data).decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


class LineSplitter:
    """Bytes in; each whole line, decoded, out to `on_line` as soon as it is complete."""

    def __init__(self, on_line: Callable[[str], None]):
        self.on_line = on_line
        self.kept = Kept()
        self.pending = bytearray()

    def feed(self, data: bytes) -> None:
        self.kept.feed(data)
        self.pending += data
        while True:
            at = self.pending.find(b"\n")
            if at < 0:
                break
            self.emit(self.pending[:at])
            del self.pending[: at + 1]
        if len(self.pending) > LONGEST_LINE:
            self.close()

    def close(self) -> None:
        if self.pending:
            self.emit(self.pending)
            self.pending = bytearray()

    def emit(self, line: bytearray) -> None:
        self.on_line(decode(line).rstrip("\n"))


# The children that run_child and stream_child are waiting on, so that an interrupt can end them all.
WAITED_ON: Set[Child] = set()
WAITED_ON_LOCK = threading.RLock()  # re-entrant: the SIGINT handler may run while its own thread holds it
INTERRUPTED = threading.Event()


def start_waited(argv: Sequence[str], env, cwd, *, stderr) -> Child:
    """`start_child` with byte pipes, recorded for `end_waited_children` until `waited` lets it go.

    Refuses (OSError) once the doctor has been interrupted: a thread that has not noticed yet must not
    start the next bisection run or collector query."""
    with WAITED_ON_LOCK:
        if INTERRUPTED.is_set():
            raise OSError(errno.ECANCELED, "the doctor was interrupted")
        child = start_child(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
        WAITED_ON.add(child)
    return child


@contextmanager
def waited(child: Child) -> Iterator[None]:
    """Wrap the wait on a child from `start_waited`: however the wait ends (its end, its time limit, a
    Ctrl-C caught here: it has its own session, so the terminal's SIGINT never reaches it), the child's
    family still alive is killed (none is when its intermediary reported its tree reaped) and the child reaped."""
    try:
        yield
    finally:
        if not child.nothing_left():
            kill_family(child)
        reap(child)
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
        with WAITED_ON_LOCK:
            WAITED_ON.discard(child)


def end_waited_children() -> None:
    """Kill every child that run_child or stream_child is waiting on, in any thread, and start no more."""
    with WAITED_ON_LOCK:
        INTERRUPTED.set()
        for child in WAITED_ON:
            kill_family(child)


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


def run_piped(argv: Sequence[str], timeout: float, env, cwd, stdout: Sink, stderr: Optional[Sink]) -> ChildResult:
    """Run `argv` in its own session, its stdout (and stderr, or merged into stdout when no sink is
    given) handed to the sinks, until it ends or `timeout` passes; its family never outlives this call."""
    started = time.monotonic()
    try:
        child = start_waited(argv, env, cwd, stderr=subprocess.STDOUT if stderr is None else subprocess.PIPE)
    except OSError as error:
        return ChildResult(tuple(argv), None, "", "", 0.0, start_error=str(error))
    sinks = {child.stdout.fileno(): stdout}
    if stderr is not None:
        sinks[child.stderr.fileno()] = stderr
    with waited(child):
        timed_out = read_pipes(child, sinks, started + timeout)
    parent_killed = not timed_out and child.reported is None and child.returncode is not None and child.returncode < 0
    return ChildResult(tuple(argv), child.program_returncode, "", "", time.monotonic() - started, timed_out=timed_out, parent_killed=parent_killed)


def run_child(argv: Sequence[str], *, timeout: float, env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None) -> ChildResult:
    """Run `argv` in its own session and return how it ended; never raises for the child's fate."""
    stdout, stderr = Kept(), Kept()
    result = run_piped(argv, timeout, env, cwd, stdout.feed, stderr.feed)
    return replace(result, stdout=stdout.text(), stderr=stderr.text())


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
    lines = LineSplitter(on_line)
    result = run_piped(argv, timeout, env, cwd, lines.feed, None)
    lines.close()
    return replace(result, stdout=lines.kept.text())
