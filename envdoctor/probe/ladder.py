"""The doctor's view of the ladder's stages: look-ups by id, titles, time limits, and how to install what is missing.

The stage table itself is declared once, in target/ladder.py, which runs under the diagnosed
interpreter; importing it here runs nothing.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from envdoctor.target.ladder import STAGES, Stage

BY_ID: Dict[str, Stage] = {stage.id: stage for stage in STAGES}
IDS: Tuple[str, ...] = tuple(stage.id for stage in STAGES)

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
