"""Which schedule entries must be replaced by plain numbers, and with which number.

Only `learning_rate`, `lr_schedule`, `clip_range` and `clip_range_vf` are replaceable: SB3 accepts a
float for each (and None for clip_range_vf) and rebuilds its FloatSchedule at load. An entry is
replaced when it holds code, is corrupt or dangerous, or needs a module outside SB3's own stack.
Where each number comes from, in order: the user's option; a float constant found statically in the
pickled code (closure cell or literal); for the learning rate the optimizer's last rate when it is
above 0; SB3's default (docs/knowledge/sb3-model-files.md §4c). A number found in the file that SB3 cannot train with
(NaN, infinite, negative, or not a number at all) is never used: the next source gives it, and a
plain schedule value of that kind is replaced too.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Mapping, Optional

SCHEDULE_KEYS = ("learning_rate", "lr_schedule", "clip_range", "clip_range_vf")
DEFAULTS = {"learning_rate": 3e-4, "clip_range": 0.2, "clip_range_vf": None}
# Modules a by-reference schedule may need without making the file depend on the user's code.
STACK_MODULES = ("stable_baselines3", "sb3_contrib", "numpy", "gymnasium", "gym", "collections", "torch", "cloudpickle")
OPTIONS = {"learning_rate": "--learning-rate", "clip_range": "--clip-range", "clip_range_vf": "--clip-range-vf"}

SOURCE_OPTION = "given with {option}"
SOURCE_CONSTANT = "constant found in the pickled code (closure cell or literal)"
SOURCE_OPTIMIZER = "the optimizer's last learning rate (policy.optimizer.pth)"
SOURCE_DEFAULT = "SB3's default"
SOURCE_MIRROR = "same as learning_rate (SB3 rebuilds lr_schedule from it at load)"
SOURCE_JSON = "the plain learning_rate stored in the file"


def usable(value: Any) -> bool:
    """A schedule number SB3 can train with: finite and not negative (a bool is not a number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def plain_ok(key: str, value: Any) -> bool:
    return usable(value) or (key == "clip_range_vf" and value is None)


def plain_replacement(key: str, data: Mapping[str, Any], entries: Mapping[str, Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    """An entry-like record for a plain (not pickled) schedule value SB3 cannot train with, else None.

    A bad plain learning_rate takes its candidates from lr_schedule: SB3 rebuilds one from the other.
    """
    if key in entries or key not in data or plain_ok(key, data[key]):
        return None
    sibling = entries.get("lr_schedule", {}) if key == "learning_rate" else {}
    return {"verdict": f"a plain value SB3 cannot train with ({data[key]!r:.40})", "constants": list(sibling.get("constants", ()))}


def foreign_modules(entry: Mapping[str, Any]) -> list:
    return [m for m in entry.get("modules", ()) if m.split(".", 1)[0] not in STACK_MODULES]


def needs_replacement(entry: Mapping[str, Any]) -> bool:
    return entry["verdict"] != "data" or bool(foreign_modules(entry))


def why(entry: Mapping[str, Any]) -> str:
    if entry["verdict"] == "data":
        return "needs " + ", ".join(foreign_modules(entry))
    return entry["verdict"]


def choose(key: str, entry: Mapping[str, Any], overrides: Mapping[str, Optional[float]], optimizer_lr: Callable[[], Optional[float]]) -> Dict[str, Any]:
    """The number for one replaced key, where it came from, and the usable constants that were candidates."""
    candidates = [c for c in entry.get("constants", ()) if usable(c)]
    if overrides.get(key) is not None:
        value, source = overrides[key], SOURCE_OPTION.format(option=OPTIONS[key])
    elif candidates:
        value, source = candidates[0], SOURCE_CONSTANT
    elif key == "learning_rate" and usable(optimizer_lr()) and optimizer_lr() > 0:
        value, source = optimizer_lr(), SOURCE_OPTIMIZER
    else:
        value, source = DEFAULTS[key], SOURCE_DEFAULT
    return {"was": why(entry), "value": value, "source": source, "candidates": candidates}


def plan(data: Mapping[str, Any], entries: Mapping[str, Mapping[str, Any]], overrides: Mapping[str, Optional[float]], optimizer_lr: Callable[[], Optional[float]]) -> Dict[str, Dict[str, Any]]:
    """{key: {was, value, source, candidates}} for every schedule key that must be replaced."""
    chosen: Dict[str, Dict[str, Any]] = {}
    for key in ("learning_rate", "clip_range", "clip_range_vf"):
        entry = entries.get(key) or plain_replacement(key, data, entries)
        if entry is not None and needs_replacement(entry):
            chosen[key] = choose(key, entry, overrides, optimizer_lr)
    lr_entry = entries.get("lr_schedule")
    if lr_entry is not None and (needs_replacement(lr_entry) or "learning_rate" in chosen):
        if "learning_rate" in chosen:
            value, source = chosen["learning_rate"]["value"], SOURCE_MIRROR
        elif usable(data.get("learning_rate")):
            value, source = data["learning_rate"], SOURCE_JSON
        else:
            picked = choose("learning_rate", lr_entry, overrides, optimizer_lr)
            value, source = picked["value"], picked["source"]
        chosen["lr_schedule"] = {"was": why(lr_entry), "value": value, "source": source, "candidates": [c for c in lr_entry.get("constants", ()) if usable(c)]}
    return {key: chosen[key] for key in SCHEDULE_KEYS if key in chosen}
