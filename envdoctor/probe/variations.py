"""The environment changes bisection tries, one at a time, to make a crash go away: the probe's
bisection (probe/bisection.py) and a run's (capture/bisect.py) re-run with each, and the checks word a
passing one with its `meaning`. Plain data, so the checks read it without loading the probe's runner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Mapping, Tuple

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@dataclass(frozen=True)
class Variation:
    """One environment change, what it rules in when it makes the failure go away, and from which stage it can matter."""

    name: str
    sets: Tuple[Tuple[str, str], ...]
    unsets: Tuple[str, ...]
    meaning: str
    from_stage: str = "interpreter"
    needs_cuda: bool = False

    def apply(self, environ: Mapping[str, str]) -> Dict[str, str]:
        changed = {k: v for k, v in environ.items() if k not in self.unsets}
        changed.update(self.sets)
        return changed

    def command(self) -> str:
        """The exact shell line a user runs to keep this setting."""
        parts = []
        if self.sets:
            parts.append("export " + " ".join(f"{k}={v}" for k, v in self.sets))
        if self.unsets:
            parts.append("unset " + " ".join(self.unsets))
        return " && ".join(parts)


VARIATIONS: Tuple[Variation, ...] = (
    Variation(
        "single-thread",
        tuple((name, "1") for name in THREAD_VARIABLES),
        (),
        "The crash needs several OpenMP/BLAS threads: oversubscription, a thread-unsafe BLAS, or two OpenMP runtimes fighting.",
    ),
    Variation(
        "no-cuda",
        (("CUDA_VISIBLE_DEVICES", ""),),
        (),
        "The crash is in the CUDA path (driver, runtime or GPU kernels); torch on the CPU works.",
        from_stage="cuda_init",
        needs_cuda=True,
    ),
    Variation(
        "aten-cpu-default",
        (("ATEN_CPU_CAPABILITY", "default"),),
        (),
        "torch's AVX2/AVX-512 kernels crash on this CPU (or under this hypervisor); its generic kernels work.",
        from_stage="import_torch",
    ),
    Variation(
        "no-ld-overrides",
        (),
        ("LD_LIBRARY_PATH", "LD_PRELOAD"),
        "A library from LD_LIBRARY_PATH or LD_PRELOAD replaces one that the wheels ship (libgomp, libstdc++, libcudart, ...).",
    ),
    Variation(
        "mkl-gnu-threading",
        (("MKL_THREADING_LAYER", "GNU"),),
        (),
        "MKL's Intel OpenMP clashes with GNU OpenMP in this process; MKL on GNU OpenMP avoids it.",
    ),
    Variation(
        "no-pythonpath",
        (),
        ("PYTHONPATH",),
        "A folder on PYTHONPATH comes before site-packages: a module there shadows an installed package, or is a broken copy of one.",
    ),
    Variation(
        "no-user-site",
        (("PYTHONNOUSERSITE", "1"),),
        (),
        "A package in the user site (~/.local/lib/pythonX.Y/site-packages) shadows the environment's own.",
    ),
)
BY_NAME = {v.name: v for v in VARIATIONS}
