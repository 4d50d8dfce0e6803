"""The exact steps a model finding recommends: the `custom_objects` load call and the sanitize command.

SB3 never decodes a key given in `custom_objects`, so passing plain numbers for the schedule keys
loads any model whose other entries are sound (docs/knowledge/sb3-model-files.md §4a, §4b).
"""

from __future__ import annotations

import json
import shlex
from pathlib import PurePath
from typing import Any, Mapping

from envdoctor.sb3.schedules import SCHEDULE_KEYS

SOUND = "data"  # the one verdict that needs no replacing: anything else, judged or not, is unsound


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


def sanitize_blockers(model: Mapping[str, Any]) -> list:
    """Entries outside the schedule keys with any verdict but "data" (code, dangerous, corrupt, or one
    not judged): sanitize cannot replace them by numbers, so it refuses those files."""
    return [e for e in model["entries"] if e["key"] not in SCHEDULE_KEYS and e["verdict"] != SOUND]


def can_sanitize(model: Mapping[str, Any]) -> bool:
    return bool(model.get("schedules")) and not sanitize_blockers(model)
