"""GPU checks: a GPU whose memory other processes already hold.

CUDA running out of memory inside a native library (cuDNN, cuBLAS workspaces, PhysX) often surfaces
as a segfault rather than a clean "CUDA out of memory" (docs/knowledge/domain-facts.md §8: isaac-sim/
OmniIsaacGymEnvs#11, NVlabs/ProtoMotions#222).
"""

from __future__ import annotations

from typing import Any, Iterable, List, Mapping, Optional

from envdoctor.checks import check
from envdoctor.facts import view_of
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
