"""The exact steps a model finding recommends: the `custom_objects` load call and the sanitize command.

SB3 never decodes a key given in `custom_objects`, so passing plain numbers for the schedule keys
loads any model whose other entries are sound (docs/knowledge/sb3-model-files.md §4a, §4b). A few
entries SB3 makes afresh at load (in `_setup_model` after the saved data is applied, or ARS's noise schedule in
`__init__` before it); sanitize drops them when they are not data only, instead of refusing (docs/knowledge/sb3-model-files.md §5, §8).
"""

from __future__ import annotations

import json
import shlex
from pathlib import PurePath
from typing import Any, Mapping

from envdoctor.knowledge.sb3_schedules import SCHEDULE_KEYS

SOUND = "data"  # the one verdict that needs no replacing: anything else, judged or not, is unsound
# Entries SB3 sets at load without the saved value: `_setup_model` after `model.__dict__.update(data)`, or the
# algorithm's `__init__` before it (base_class.py `load`), docs/knowledge/sb3-model-files.md §8.
DROPPABLE = {
    "weights": "ARS sets it from the policy's parameters at load (_setup_model)",
    "_last_lstm_states": "RecurrentPPO makes fresh zero states at load (_setup_model)",
    "exploration_schedule": "DQN makes it again from exploration_initial_eps, _final_eps and _fraction at load (_setup_model)",
    "delta_std_schedule": "ARS keeps the one its __init__ makes at load from the default delta_std 0.05; predicting never "
    "uses it, training explores with 0.05 unless delta_std_schedule is set again",
}


def load_call(model: Mapping[str, Any]) -> str:
    """`from sb3_contrib import MaskablePPO; model = MaskablePPO.load("m.zip", custom_objects={...})`."""
    algorithm = model.get("algorithm") or {"module": "stable_baselines3", "name": "PPO"}
    objects = ", ".join(f"{json.dumps(key)}: {plan['value']!r}" for key, plan in model.get("schedules", {}).items())
    return (
        f"from {algorithm['module']} import {algorithm['name']}; "
        f"model = {algorithm['name']}.load({json.dumps(str(model['path']))}, custom_objects={{{objects}}})"
    )


def sanitized_name(path: str) -> str:
    pure = PurePath(path)
    return str(pure.with_name(f"{pure.stem}-sanitized{pure.suffix or '.zip'}"))


def sanitize_command(model: Mapping[str, Any]) -> str:
    path = str(model["path"])
    return f"envdoctor sanitize {shlex.quote(path)} -o {shlex.quote(sanitized_name(path))}"


def droppable(entry: Mapping[str, Any]) -> bool:
    """Code in an entry SB3 makes again at load: a copy without it loads the same (a dangerous one is refused)."""
    return entry["key"] in DROPPABLE and entry["verdict"] == "code"


def sanitize_blockers(model: Mapping[str, Any]) -> list:
    """Entries outside the schedule keys with any verdict but "data" (code, dangerous, corrupt, or one
    not judged), unless droppable: sanitize cannot replace them by numbers, so it refuses those files."""
    return [e for e in model["entries"] if e["key"] not in SCHEDULE_KEYS and e["verdict"] != SOUND and not droppable(e)]


def sanitizable(model: Mapping[str, Any]) -> bool:
    """Nothing makes sanitize refuse: no blocking entry, and weights torch's weights_only loader takes."""
    return not sanitize_blockers(model) and all(m["verdict"] == SOUND for m in model.get("weights", ()))


def can_sanitize(model: Mapping[str, Any]) -> bool:
    """Sanitize has something to change (a schedule, a droppable entry) and nothing that blocks it."""
    changes = model.get("schedules") or any(droppable(e) for e in model["entries"])
    return bool(changes) and sanitizable(model)
