"""What a signal means, for a training run and for a probe stage (one table), and the exit status a
shell would report for an ending."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Optional

@dataclass(frozen=True)
class Meaning:
    """What a signal means, in two voices: `ending` says why it usually ends an ML/RL training process
    (a run's ending), `stage` what it most often means when a probe stage dies of it."""

    ending: str
    stage: Optional[str] = None


# docs/knowledge/domain-facts.md §6 (SIGILL), §8 (segfaults, the DataLoader's SIGBUS, the OOM killer).
MEANINGS = {
    "SIGSEGV": Meaning(
        "segmentation fault: native code read or wrote memory it does not own",
        "a native library read or wrote memory it does not own",
    ),
    "SIGABRT": Meaning(
        "abort: native code gave up (a failed assertion, an uncaught C++ exception, heap corruption found by glibc)",
        "a native library gave up on purpose (an assertion, OpenMP's duplicate-runtime check, a C++ exception nobody caught)",
    ),
    "SIGBUS": Meaning(
        "bus error: a bad memory mapping, most often a full /dev/shm under DataLoader workers",
        "a memory-mapped file or shared memory (/dev/shm) ran out or vanished under the process",
    ),
    "SIGILL": Meaning(
        "illegal instruction: the binary uses a CPU instruction this CPU lacks (e.g. AVX2/AVX-512)",
        "the CPU met an instruction it does not have: a wheel built for a newer CPU (AVX2/AVX-512) than this one",
    ),
    "SIGFPE": Meaning("arithmetic error in native code (integer division by zero)", "a native library divided an integer by zero"),
    "SIGKILL": Meaning(
        "killed unconditionally: usually the kernel's OOM killer or a scheduler's memory limit",
        "something outside killed the process; most often the kernel's out-of-memory killer",
    ),
    "SIGTERM": Meaning("asked to terminate: by a job scheduler, a container runtime or a user"),
    "SIGINT": Meaning("interrupted (Ctrl-C)"),
    "SIGHUP": Meaning("the terminal or session went away"),
    "SIGPIPE": Meaning("wrote to a pipe whose reader had gone"),
    "SIGXCPU": Meaning("the CPU-time limit (RLIMIT_CPU or a scheduler's) ran out"),
    "SIGXFSZ": Meaning("the file-size limit (RLIMIT_FSIZE) was exceeded"),
}
# Raised by the process's own native code, where a debugger shows the faulting frame; every other
# signal that ends a run was sent from outside it (the OOM killer, a scheduler, a user, a timeout).
FAULTS = ("SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL", "SIGFPE")
# What `timeout(1)` returns when it ends a command: scripts around training already understand it.
HANG_STATUS = 124
NOT_FOUND_STATUS, NOT_EXECUTABLE_STATUS = 127, 126


def name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def meaning(number: int) -> str:
    """Why signal `number` ended a run."""
    known = MEANINGS.get(name(number))
    return known.ending if known else "ended by a signal"


def stage_meaning(signal_name: Optional[str]) -> str:
    """What the signal a probe stage died of most often means."""
    known = MEANINGS.get(signal_name or "")
    return known.stage if known and known.stage else "the process ended without reporting the stage's end"


def exit_status(returncode: int) -> int:
    """The status a shell reports: the exit code, or 128+N for a death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def signal_of(returncode: Optional[int]) -> Optional[int]:
    return -returncode if returncode is not None and returncode < 0 else None
