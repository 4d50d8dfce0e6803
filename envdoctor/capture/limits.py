"""The memory limits a process lives under, and the kernel's word on whether it was OOM-killed.

Three limits end training runs: the kernel OOM killer (seen in a cgroup's oom_kill counter and in the
kernel log), a container's cgroup memory limit, and a per-process address-space limit (RLIMIT_AS:
allocations fail, Python raises MemoryError). These read live /proc and /sys files of the running
command, so they ignore ENVDOCTOR_ROOT: a re-rooted host cannot hold a live process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from envdoctor.proc.children import run_child

CGROUP_MOUNT = Path("/sys/fs/cgroup")
V1_NO_LIMIT = 1 << 62  # v1 reports "no limit" as a page-rounded 2**63-1


@dataclass(frozen=True)
class MemoryCgroup:
    """A memory cgroup directory and which cgroup version's files it has."""

    path: Path
    version: int

    def read(self, name: str) -> Optional[str]:
        try:
            return (self.path / name).read_text()
        except OSError:
            return None

    def limit_bytes(self) -> Optional[int]:
        raw = self.read("memory.max" if self.version == 2 else "memory.limit_in_bytes")
        if raw is None or raw.strip() == "max" or not raw.strip().isdigit():
            return None
        value = int(raw)
        return None if value >= V1_NO_LIMIT else value

    def oom_kills(self) -> Optional[int]:
        raw = self.read("memory.events" if self.version == 2 else "memory.oom_control")
        match = re.search(r"^oom_kill (\d+)$", raw or "", re.MULTILINE)
        return int(match.group(1)) if match else None


def deepest_existing(base: Path, cgroup_path: str) -> Optional[Path]:
    """`base` joined with the longest tail of `cgroup_path` that exists: inside a container the
    mount often shows the container's own cgroup as its root while /proc still names the full path."""
    parts = [p for p in cgroup_path.split("/") if p]
    for start in range(len(parts) + 1):
        candidate = base.joinpath(*parts[start:])
        if candidate.is_dir():
            return candidate
    return None


def memory_cgroup(pid: int) -> Optional[MemoryCgroup]:
    """The memory cgroup of a live process (v1 memory controller first, as hybrid hosts use it)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    entries = [line.split(":", 2) for line in lines if line.count(":") >= 2]
    for _, controllers, path in entries:
        if "memory" in controllers.split(","):
            found = deepest_existing(CGROUP_MOUNT / "memory", path)
            if found is not None and (found / "memory.oom_control").exists():
                return MemoryCgroup(found, 1)
    for _, controllers, path in entries:
        if controllers == "":
            found = deepest_existing(CGROUP_MOUNT, path)
            if found is not None and (found / "memory.events").exists():
                return MemoryCgroup(found, 2)
    return None


def address_space_limit(process) -> Optional[int]:
    """A psutil process's soft RLIMIT_AS in bytes, None when unlimited or unreadable."""
    from envdoctor.proc.processes import psutil

    try:
        soft, _ = process.rlimit(psutil.RLIMIT_AS)
    except (psutil.Error, OSError, AttributeError):
        return None
    return None if soft in (psutil.RLIM_INFINITY, -1) else soft


KILLED = re.compile(r"(?:Killed process|oom-kill:.*?\bpid=)\s*(\d+)")


def kernel_oom_lines(pids) -> List[str]:
    """Kernel-log lines that report one of `pids` killed for lack of memory ([] when the log is unreadable)."""
    result = run_child(["dmesg"], timeout=5)
    if not result.ok:
        return []
    wanted = {str(p) for p in pids}
    return [line.strip() for line in result.stdout.splitlines() if any(m in wanted for m in KILLED.findall(line))]
