"""The part of psutil envdoctor uses, answered from Linux's /proc.

The zipapp vendors nothing compiled, so psutil is absent there; on Linux every question envdoctor
asks about its children (who they are, whether they live, their CPU time, memory and limits) is a
read of /proc/PID. envdoctor.proc.processes picks psutil when it is installed and this module otherwise.
The real /proc is read, never one under ENVDOCTOR_ROOT: live processes cannot be re-rooted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import namedtuple
from typing import Dict, List, Optional

try:
    import resource
except ImportError:  # not a Unix: no process here has limits to read
    resource = None

STATUS_ZOMBIE = "zombie"
STATES = {"R": "running", "S": "sleeping", "D": "disk-sleep", "T": "stopped", "t": "tracing-stop", "Z": STATUS_ZOMBIE, "X": "dead", "I": "idle"}
RLIMIT_AS = getattr(resource, "RLIMIT_AS", None)
RLIM_INFINITY = getattr(resource, "RLIM_INFINITY", -1)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

CpuTimes = namedtuple("CpuTimes", "user system")
MemoryInfo = namedtuple("MemoryInfo", "rss vms")
VirtualMemory = namedtuple("VirtualMemory", "total available")


class Error(Exception):
    """Base of the errors below, as psutil.Error is."""


class NoSuchProcess(Error):
    pass


class AccessDenied(Error):
    pass


def read(pid: int, name: str) -> bytes:
    """/proc/PID/NAME, with a vanished process as NoSuchProcess and a forbidden one as AccessDenied."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as stream:
            return stream.read()
    except PermissionError:
        raise AccessDenied(pid) from None
    except OSError:
        raise NoSuchProcess(pid) from None


def virtual_memory() -> VirtualMemory:
    """RAM in bytes from /proc/meminfo (MemAvailable is missing before Linux 3.14: MemFree then)."""
    try:
        with open("/proc/meminfo", "rb") as stream:
            lines = stream.read().decode("ascii", "replace").splitlines()
    except OSError:
        raise AccessDenied("/proc/meminfo") from None
    kib = {}
    for line in lines:
        name, _, rest = line.partition(":")
        if rest.split()[:1] and rest.split()[0].isdigit():
            kib[name] = int(rest.split()[0])
    return VirtualMemory(kib.get("MemTotal", 0) * 1024, kib.get("MemAvailable", kib.get("MemFree", 0)) * 1024)


def stat_fields(pid: int) -> List[str]:
    """/proc/PID/stat from the state on (field 3 is index 0); the name before it may hold spaces and ')'."""
    text = read(pid, "stat").decode("utf-8", "replace")
    return text[text.rindex(")") + 2:].split()


def parents() -> Dict[int, List[int]]:
    """Every live pid's children, by parent pid, from one pass over /proc."""
    children: Dict[int, List[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:  # no /proc (macOS, Windows): no process can be found
        return children
    for name in names:
        if name.isdigit():
            try:
                children.setdefault(int(stat_fields(int(name))[1]), []).append(int(name))
            except (Error, IndexError, ValueError):
                continue
    return children


class Process:
    """A process known by its pid and its start time, so a recycled pid is never taken for it."""

    def __init__(self, pid: int):
        self.pid = int(pid)
        self.started = self.start_ticks()
        self.last_cpu: Optional[tuple] = None

    def start_ticks(self) -> str:
        fields = stat_fields(self.pid)
        return fields[19] if len(fields) > 19 else ""

    def fields(self) -> List[str]:
        fields = stat_fields(self.pid)
        if len(fields) > 19 and fields[19] != self.started:
            raise NoSuchProcess(self.pid)
        return fields

    def status(self) -> str:
        state = self.fields()[0]
        return STATES.get(state, state)

    def children(self, recursive: bool = False) -> List["Process"]:
        tree, found, queue = parents(), [], [self.pid]
        while queue:
            for pid in tree.get(queue.pop(0), []):
                with contextlib.suppress(Error):
                    found.append(Process(pid))
                    if recursive:
                        queue.append(pid)
        return found

    def send_signal(self, number: int) -> None:
        self.fields()
        try:
            os.kill(self.pid, number)
        except ProcessLookupError:
            raise NoSuchProcess(self.pid) from None
        except PermissionError:
            raise AccessDenied(self.pid) from None

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def cpu_times(self) -> CpuTimes:
        fields = self.fields()
        return CpuTimes(int(fields[11]) / CLOCK_TICKS, int(fields[12]) / CLOCK_TICKS)

    def cpu_percent(self, interval=None) -> float:
        """Percent of one CPU since the previous call (0.0 on the first), as psutil's with interval None."""
        times, now = self.cpu_times(), time.monotonic()
        previous, self.last_cpu = self.last_cpu, (times.user + times.system, now)
        if previous is None or now <= previous[1]:
            return 0.0
        return 100.0 * (self.last_cpu[0] - previous[0]) / (now - previous[1])

    def memory_info(self) -> MemoryInfo:
        size, resident = read(self.pid, "statm").split()[:2]
        return MemoryInfo(int(resident) * PAGE_SIZE, int(size) * PAGE_SIZE)

    def name(self) -> str:
        return read(self.pid, "comm").decode("utf-8", "replace").strip()

    def cmdline(self) -> List[str]:
        return [part.decode("utf-8", "replace") for part in read(self.pid, "cmdline").split(b"\0") if part]

    def rlimit(self, which: int) -> tuple:
        if resource is None or not hasattr(resource, "prlimit"):
            raise AccessDenied(self.pid)
        try:
            return resource.prlimit(self.pid, which)
        except ProcessLookupError:
            raise NoSuchProcess(self.pid) from None
        except PermissionError:
            raise AccessDenied(self.pid) from None

    def oneshot(self):
        return contextlib.nullcontext()
