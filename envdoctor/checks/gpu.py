"""GPU checks: a GPU whose memory other processes already hold.

CUDA running out of memory inside a native library (cuDNN, cuBLAS workspaces, PhysX) often surfaces
as a segfault rather than a clean "CUDA out of memory" (shared knowledge notes §8: isaac-sim/
OmniIsaacGymEnvs#11, NVlabs/ProtoMotions#222).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from envdoctor.checks import check
from envdoctor.checks.cuda import gpus
from envdoctor.checks.facts import gib
from envdoctor.model import Finding, Remedy, Severity

BUSY_FRACTION = 0.9


def used_fraction(gpu: Mapping[str, Any]) -> float:
    total, used = gpu.get("memory_total_bytes") or 0, gpu.get("memory_used_bytes") or 0
    return used / total if total else 0.0


@check("gpu.memory-low", "Another process holds most of a GPU's memory", requires=("gpu",))
def memory_low(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for gpu in gpus(facts):
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
            remedies=(
                Remedy("See which processes hold the memory:", "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"),
                Remedy("Stop them, or run on another GPU:", f"CUDA_VISIBLE_DEVICES={1 if index == 0 else 0} python train.py"),
                Remedy("Or shrink the run (fewer parallel environments, smaller batches)."),
            ),
        )
