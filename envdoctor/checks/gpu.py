"""GPU checks: a GPU whose memory other processes already hold, and GPUs CUDA_VISIBLE_DEVICES hides.

CUDA running out of memory inside a native library (cuDNN, cuBLAS workspaces, PhysX) often surfaces
as a segfault rather than a clean "CUDA out of memory" (docs/knowledge/domain-facts.md §8: isaac-sim/
OmniIsaacGymEnvs#11, NVlabs/ProtoMotions#222).
"""

from __future__ import annotations

from typing import Any, Iterable, List, Mapping, Optional

from envdoctor.checks import check
from envdoctor.facts import view_of
from envdoctor.facts.environ import EnvironView
from envdoctor.facts.gpu import GpuView
from envdoctor.model import Finding, Remedy, Severity
from envdoctor.words import gib

BUSY_FRACTION = 0.9


def used_fraction(gpu: Mapping[str, Any]) -> float:
    total, used = gpu.get("memory_total_bytes") or 0, gpu.get("memory_used_bytes") or 0
    return used / total if total else 0.0


def freest_other(gpu: Mapping[str, Any], present: List[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The least used other GPU that is not busy itself: the one worth moving the run to, if any."""
    others = [g for g in present if g.get("index") != gpu.get("index") and used_fraction(g) < BUSY_FRACTION]
    return min(others, key=used_fraction, default=None)


def memory_remedies(gpu: Mapping[str, Any], present: List[Mapping[str, Any]]) -> tuple:
    """NVML numbers GPUs in PCI bus order and CUDA fastest first, so the move names the order it means."""
    other = freest_other(gpu, present)
    move = (
        Remedy(f"Stop them, or run on GPU {other.get('index')} ({used_fraction(other):.0%} used):", f"CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={other.get('index')} python train.py")
        if other
        else Remedy("Stop them; no other GPU here has room to move the run to.")
    )
    return (
        Remedy("See which processes hold the memory:", "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"),
        move,
        Remedy("Or shrink the run (fewer parallel environments, smaller batches)."),
    )


@check("gpu.memory-low", "Another process holds most of a GPU's memory", requires=("gpu",))
def memory_low(facts: Mapping[str, Any]) -> Iterable[Finding]:
    present = view_of(facts, GpuView).gpus
    for gpu in present:
        fraction = used_fraction(gpu)
        if fraction < BUSY_FRACTION:
            continue
        index = gpu.get("index")
        holders = gpu.get("processes") or []
        yield Finding(
            id="gpu.memory-low",
            severity=Severity.WARNING,
            title=f"GPU {index} ({gpu.get('name')}) has {fraction:.0%} of its memory in use before training starts",
            explanation=(
                f"Only {gib(gpu.get('memory_free_bytes') or 0)} of {gib(gpu['memory_total_bytes'])} are free. CUDA running "
                "out of memory inside cuDNN, cuBLAS or a simulator's native code often ends in a segfault instead of a "
                "\"CUDA out of memory\" error."
            ),
            evidence={
                "gpu": gpu.get("name"),
                "memory_used_bytes": gpu.get("memory_used_bytes"),
                "memory_total_bytes": gpu.get("memory_total_bytes"),
                "processes": holders,
            },
            remedies=memory_remedies(gpu, present),
        )


def hiding_value(value: str, count: int) -> bool:
    """Whether CUDA_VISIBLE_DEVICES leaves no GPU visible: CUDA keeps the devices listed before the first
    entry that names none (an index out of range, a word), so an empty value, -1 or a bad first entry
    hides them all (CUDA C++ Programming Guide, "CUDA Environment Variables"). UUIDs (GPU-..., MIG-...)
    are taken as naming a device."""
    first = value.split(",")[0].strip()
    if first.startswith(("GPU-", "MIG-")):
        return False
    return not (first.isdigit() and int(first) < count)


@check("gpu.devices-hidden", "CUDA_VISIBLE_DEVICES hides every GPU the driver sees", requires=("environ", "gpu"))
def devices_hidden(facts: Mapping[str, Any]) -> Iterable[Finding]:
    present = view_of(facts, GpuView).gpus
    value = view_of(facts, EnvironView).variables.get("CUDA_VISIBLE_DEVICES")
    if value is None or not present or not hiding_value(value, len(present)):
        return
    yield Finding(
        id="gpu.devices-hidden",
        severity=Severity.WARNING,
        title=f"CUDA_VISIBLE_DEVICES={value!r} hides all {len(present)} GPU(s) ({present[0].get('name')}) from CUDA",
        explanation=(
            "CUDA shows a process only the devices CUDA_VISIBLE_DEVICES lists before its first entry that names no device; "
            "with this value that is none, so torch.cuda.is_available() is False and training silently runs on the CPU."
        ),
        evidence={"CUDA_VISIBLE_DEVICES": value, "gpus": [g.get("name") for g in present]},
        remedies=(
            Remedy("Show CUDA every GPU:", "unset CUDA_VISIBLE_DEVICES"),
            Remedy("Or name the GPUs to use by index:", "export CUDA_VISIBLE_DEVICES=" + ",".join(str(g.get("index", i)) for i, g in enumerate(present))),
        ),
        references=("https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables",),
    )
