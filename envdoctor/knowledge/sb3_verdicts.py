"""Judging a model's static facts against a target interpreter (pure functions over facts).

Measured (docs/knowledge/sb3-model-files.md §3c, §4b): code pickled by another CodeType layout fails to unpickle with
TypeError, which SB3 catches, warns about and replaces by the constructor default; code of the same
layout but another minor version unpickles fine and can segfault when called. `learning_rate` (and
`lr_schedule`) are called while loading, `clip_range`/`clip_range_vf` in `train()`.
"""

from __future__ import annotations

import enum
from typing import Any, Dict, List, Mapping, Optional

from envdoctor.knowledge import bytecode

WHEN_RUN = {
    "learning_rate": "while loading (the policy is built with lr_schedule(1))",
    "lr_schedule": "while loading (the policy is built with lr_schedule(1))",
    "clip_range": "during training (train() calls it every update)",
    "clip_range_vf": "during training (train() calls it every update)",
    "policy_kwargs": "while loading (the network is built from it)",
    "policy_class": "while loading",
    "observation_space": "while loading",
    "action_space": "while loading",
}


class Effect(enum.Enum):
    OK = "ok"
    UNCERTAIN = "uncertain"
    CRASH_RISK = "crash-risk"
    TYPE_ERROR = "type-error"


def target_minor(target: Mapping[str, Any]) -> Optional[str]:
    return bytecode.minor_of((target.get("python") or {}).get("version"))


def when_run(key: str) -> str:
    return WHEN_RUN.get(key, "when SB3 uses it")


def effect(function: Mapping[str, Any], minor: Optional[str]) -> Effect:
    """What calling this pickled function does under Python `minor`."""
    if minor is None:
        return Effect.UNCERTAIN
    if bytecode.family_of_minor(minor) != function["n_args"]:
        return Effect.TYPE_ERROR
    producer = function.get("producer_minor")
    if producer == minor:
        return Effect.OK
    if producer is None and minor in function.get("bytecode_candidates", ()):
        return Effect.UNCERTAIN
    return Effect.CRASH_RISK


def undefined_opcodes(function: Mapping[str, Any], target: Mapping[str, Any]) -> List[int]:
    """Opcodes the target does not define: a certain crash when called (absence proves nothing)."""
    defined = target.get("opcodes")
    if not defined:
        return []
    return bytecode.undefined_opcodes(bytes.fromhex(function.get("code_hex", "")), defined)


def code_effects(model: Mapping[str, Any], target: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """One row per function pickled by value: its key, producer, effect here and undefined opcodes."""
    minor = target_minor(target)
    rows = []
    for entry in model["entries"]:
        for function in entry["functions"]:
            rows.append({
                "key": entry["key"],
                "qualname": function["qualname"],
                "filename": function.get("filename"),
                "producer": function.get("producer_minor") or function["python_guess"],
                "effect": effect(function, minor).value,
                "undefined_opcodes": undefined_opcodes(function, target),
                "runs": when_run(entry["key"]),
            })
    return rows


def missing_modules(model: Mapping[str, Any], target: Mapping[str, Any]) -> Dict[str, List[str]]:
    """{module: [keys needing it]} for every module the target cannot find."""
    found = target.get("modules") or {}
    missing: Dict[str, List[str]] = {}
    for entry in model["entries"]:
        for module in entry["modules"]:
            if found.get(module) is False:
                missing.setdefault(module, []).append(entry["key"])
    return missing


def model_numpy_major(model: Mapping[str, Any]) -> Optional[int]:
    """NumPy major the pickles need (numpy._core / numpy.core), else system_info.txt's."""
    majors = {e["numpy_major"] for e in model["entries"] if e["numpy_major"]}
    if majors:
        return max(majors)
    text = model["system_info"].get("numpy", "")
    head = text.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def major_of(version: Optional[str]) -> Optional[int]:
    head = (version or "").split(".", 1)[0]
    return int(head) if head.isdigit() else None
