"""What the doctor knows about the ladder's stages: titles, time limits, and how to install what is missing.

The stages themselves live in target/ladder.py (it runs under the diagnosed interpreter and cannot
import envdoctor); both lists use the same ids, in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple


@dataclass(frozen=True)
class Stage:
    """One rung: its id, what a person reads, and how long it may take before it counts as a hang."""

    id: str
    title: str
    limit_s: float
    cuda: bool = False


STAGES: Tuple[Stage, ...] = (
    Stage("interpreter", "interpreter start", 30),
    Stage("import_numpy", "import numpy", 60),
    Stage("import_torch", "import torch", 120),
    Stage("cpu_ops", "CPU tensor op + BLAS matmul", 60),
    Stage("thread_pools", "thread pools (OpenMP/BLAS)", 30),
    Stage("cuda_init", "CUDA init + device properties", 120, cuda=True),
    Stage("cuda_matmul", "CUDA matmul", 60, cuda=True),
    Stage("import_gymnasium", "import gymnasium", 60),
    Stage("import_sb3", "import stable_baselines3", 60),
    Stage("import_sb3_contrib", "import sb3_contrib", 60),
    # Constructing the first model imports torch._dynamo (Optimizer.__init__ does), most of its time.
    Stage("maskable_ppo", "MaskablePPO construct", 120),
    Stage("learn", "learn 64 steps", 120),
    Stage("save_load", "save/load round trip", 60),
)
BY_ID: Dict[str, Stage] = {stage.id: stage for stage in STAGES}
IDS = tuple(stage.id for stage in STAGES)

# Importable module → the distribution that provides it.
DISTRIBUTIONS = {
    "numpy": "numpy",
    "torch": "torch",
    "gymnasium": "gymnasium",
    "stable_baselines3": "stable-baselines3",
    "sb3_contrib": "sb3-contrib",
}


def title(stage_id: str) -> str:
    stage = BY_ID.get(stage_id)
    return stage.title if stage else stage_id


def install_hint(module: Optional[str], python: str) -> str:
    """The command that installs the distribution of `module` into the diagnosed interpreter."""
    if not module:
        return ""
    distribution = DISTRIBUTIONS.get(module, module)
    if distribution == "torch":
        return f"{python} -m pip install torch (pick the build for your CUDA from https://pytorch.org/get-started/locally/)"
    return f"{python} -m pip install {distribution}"


def limits(extra_s: float = 0.0) -> Dict[str, float]:
    """Each stage's time limit, `extra_s` longer than its own: a probe timeout raised above the default
    gives every stage the time it adds, so no stage's own limit can cut the longer run short."""
    return {stage.id: stage.limit_s + max(extra_s, 0.0) for stage in STAGES}
