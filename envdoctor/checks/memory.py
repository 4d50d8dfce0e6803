"""Memory checks: a small /dev/shm breaks DataLoader workers; little RAM and no swap end in the OOM killer.

Facts: docs/knowledge/domain-facts.md §8 (pytorch README "Docker Image"; Docker's default --shm-size is 64 MB).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from envdoctor.checks import check
from envdoctor.facts import view_of
from envdoctor.facts.memory import MemoryView
from envdoctor.model import PYTHON, Finding, Remedy, Severity
from envdoctor.words import gib, mib

SHM_SMALL_BYTES = 1 * 2 ** 30
RAM_LOW_BYTES = 8 * 2 ** 30
NO_SWAP_NOTE_BELOW_BYTES = 32 * 2 ** 30


@check("memory.shm-small", "/dev/shm too small for DataLoader workers", requires=("memory",))
def shm_small(facts: Mapping[str, Any]) -> Iterable[Finding]:
    memory = view_of(facts, MemoryView)
    size = memory.shm_total_bytes
    if size is None and memory.shm_unreadable:
        yield shm_missing(memory.shm_unreadable)
    if size is None or size >= SHM_SMALL_BYTES:
        return
    yield Finding(
        id="memory.shm-small",
        severity=Severity.WARNING,
        title=f"/dev/shm is only {mib(size)}: DataLoader workers die with a bus error",
        explanation=(
            "PyTorch passes tensors between worker processes through shared memory. With a small /dev/shm "
            "(Docker's default is 64 MB) workers are killed by SIGBUS: \"DataLoader worker (pid N) is killed "
            "by signal: Bus error\"."
        ),
        evidence={"shm_total_bytes": size},
        remedies=(
            Remedy("Start the container with more shared memory:", "docker run --shm-size=8g ..."),
            Remedy("or share the host's IPC namespace:", "docker run --ipc=host ..."),
            Remedy("or load data in the main process:", "DataLoader(..., num_workers=0)", PYTHON),
        ),
        references=("https://github.com/pytorch/pytorch#docker-image",),
    )


def shm_missing(why: str) -> Finding:
    """No /dev/shm at all: the smallest segment there is."""
    return Finding(
        id="memory.shm-small",
        severity=Severity.WARNING,
        title=f"/dev/shm cannot be used ({why}): DataLoader workers cannot share tensors",
        explanation=(
            "PyTorch passes tensors between worker processes through shared memory in /dev/shm. Without it, "
            "torch.multiprocessing fails with \"unable to open shared memory object\" as soon as a worker "
            "sends a batch."
        ),
        evidence={"shm_total_bytes": None, "shm_unreadable": why},
        remedies=(
            Remedy("Start the container with shared memory:", "docker run --shm-size=8g ..."),
            Remedy("or mount it here:", "sudo mkdir -p /dev/shm && sudo mount -t tmpfs -o size=8g tmpfs /dev/shm"),
            Remedy("or load data in the main process:", "DataLoader(..., num_workers=0)", PYTHON),
        ),
        references=("https://github.com/pytorch/pytorch#docker-image",),
    )


@check("memory.low-ram", "Little RAM or no swap for a training run", requires=("memory",))
def low_ram(facts: Mapping[str, Any]) -> Iterable[Finding]:
    memory = view_of(facts, MemoryView)
    ram, swap = memory.ram_total_bytes, memory.swap_total_bytes
    if ram is None:
        return
    if ram < RAM_LOW_BYTES:
        yield Finding(
            id="memory.low-ram",
            severity=Severity.WARNING,
            title=f"Only {gib(ram)} of RAM: importing torch and a replay buffer can exhaust it",
            explanation="The kernel's OOM killer ends the process with SIGKILL, which looks like an unexplained crash.",
            evidence={"ram_total_bytes": ram, "swap_total_bytes": swap},
            remedies=(
                Remedy("Reduce buffer_size / n_envs, or add swap:", "sudo fallocate -l 8G /swapfile && sudo chmod 600 /swapfile && sudo mkswap /swapfile && sudo swapon /swapfile"),
            ),
        )
    elif swap == 0 and ram < NO_SWAP_NOTE_BELOW_BYTES:
        yield Finding(
            id="memory.low-ram",
            severity=Severity.INFO,
            title=f"No swap next to {gib(ram)} of RAM: a memory peak is fatal",
            explanation="Without swap, the first allocation beyond RAM makes the OOM killer end the run with SIGKILL.",
            evidence={"ram_total_bytes": ram, "swap_total_bytes": swap},
            remedies=(Remedy("Watch `dmesg` for 'Out of memory: Killed process' after an unexplained SIGKILL.", "sudo dmesg | grep -i 'killed process'"),),
        )
