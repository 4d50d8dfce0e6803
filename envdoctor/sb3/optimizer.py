"""The optimizer's last learning rate, read from `policy.optimizer.pth` without torch.

The member is itself a torch zip whose `*/data.pkl` holds `param_groups[0]['lr']` as a plain float;
the symbolic pickle machine reads it in milliseconds, where `torch.load` would first import torch
(the very thing that may crash here). It is the LAST rate used: 0.0 after a linear schedule ran out.
Everything in that inner zip is untrusted and bounded like the model itself: a damaged, encrypted,
oversized or too deeply nested inner zip, or a rate SB3 cannot train with (NaN, infinite, negative), means
no rate found.
"""

from __future__ import annotations

from typing import Any, Optional

from envdoctor.knowledge.sb3_schedules import usable
from envdoctor.sb3 import pickle_vm
from envdoctor.sb3.archive import OPTIMIZER, ModelArchive
from envdoctor.sb3.weights_only import UNREADABLE, inner_pickles


def last_learning_rate(model: ModelArchive) -> Optional[float]:
    """param_groups[0]['lr'] of the saved optimizer, or None when absent, unreadable or unusable."""
    if OPTIMIZER not in model.infos:
        return None
    try:
        return usable_rate(state_root(model))
    except (*UNREADABLE, pickle_vm.TooLarge):
        return None


def state_root(model: ModelArchive) -> Any:
    """The root node of the inner zip's data.pkl, or None when it has none."""
    pickles = [data for name, data in inner_pickles(model, OPTIMIZER) if name == "data.pkl" or name.endswith("/data.pkl")]
    return pickle_vm.run(pickles[0]).root if pickles else None


def usable_rate(root: Any) -> Optional[float]:
    groups = root.get("param_groups") if isinstance(root, pickle_vm.Dict_) else None
    if not isinstance(groups, list) or not groups or not isinstance(groups[0], pickle_vm.Dict_):
        return None
    lr = groups[0].get("lr")
    return float(lr) if usable(lr) else None
