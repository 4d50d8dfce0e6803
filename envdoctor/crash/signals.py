"""What a signal means for a training run, and the exit status a shell would report for an ending."""

from __future__ import annotations

import signal
from typing import Optional

# Why each signal usually ends an ML/RL training process (docs/knowledge/domain-facts.md §6 (SIGILL),
# §8 (segfaults, the DataLoader's SIGBUS, the OOM killer)).
MEANINGS = {
    "SIGSEGV": "segmentation fault: native code read or wrote memory it does not own",
    "SIGABRT": "abort: native code gave up (a failed assertion, an uncaught C++ exception, heap corruption found by glibc)",
    "SIGBUS": "bus error: a bad memory mapping, most often a full /dev/shm under DataLoader workers",
    "SIGILL": "illegal instruction: the binary uses a CPU instruction this CPU lacks (e.g. AVX2/AVX-512)",
    "SIGFPE": "arithmetic error in native code (integer division by zero)",
    "SIGKILL": "killed unconditionally: usually the kernel's OOM killer or a scheduler's memory limit",
    "SIGTERM": "asked to terminate: by a job scheduler, a container runtime or a user",
    "SIGINT": "interrupted (Ctrl-C)",
    "SIGHUP": "the terminal or session went away",
    "SIGPIPE": "wrote to a pipe whose reader had gone",
    "SIGXCPU": "the CPU-time limit (RLIMIT_CPU or a scheduler's) ran out",
    "SIGXFSZ": "the file-size limit (RLIMIT_FSIZE) was exceeded",
}
# What `timeout(1)` returns when it ends a command: scripts around training already understand it.
HANG_STATUS = 124
NOT_FOUND_STATUS, NOT_EXECUTABLE_STATUS = 127, 126


def name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def meaning(number: int) -> str:
    return MEANINGS.get(name(number), "ended by a signal")


def exit_status(returncode: int) -> int:
    """The status a shell reports: the exit code, or 128+N for a death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def signal_of(returncode: Optional[int]) -> Optional[int]:
    return -returncode if returncode is not None and returncode < 0 else None
