"""Static forensics of one SB3 model zip: what it holds, who saved it, what loading it would run.

The result is plain JSON-able facts (target-independent); `envdoctor.knowledge.sb3_verdicts` judges them
against a target interpreter. Nothing is unpickled.
"""

from __future__ import annotations

import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from envdoctor.knowledge import bytecode, sb3_schedules
from envdoctor.sb3 import classify, optimizer, pickle_vm, system_info, weights_only
from envdoctor.sb3.archive import SYSTEM_INFO, VERSION, ModelArchive

# The policy module names the algorithm class to call `.load` on.
ALGORITHMS = {
    "sb3_contrib.common.maskable.policies": ("sb3_contrib", "MaskablePPO"),
    "sb3_contrib.common.recurrent.policies": ("sb3_contrib", "RecurrentPPO"),
    "sb3_contrib.qrdqn.policies": ("sb3_contrib", "QRDQN"),
    "sb3_contrib.tqc.policies": ("sb3_contrib", "TQC"),
    "sb3_contrib.ars.policies": ("sb3_contrib", "ARS"),
    "sb3_contrib.crossq.policies": ("sb3_contrib", "CrossQ"),
    "stable_baselines3.dqn.policies": ("stable_baselines3", "DQN"),
    "stable_baselines3.sac.policies": ("stable_baselines3", "SAC"),
    "stable_baselines3.td3.policies": ("stable_baselines3", "TD3"),
}


def serialized(value: Any) -> bool:
    return isinstance(value, dict) and ":serialized:" in value


def algorithm(data: Mapping[str, Any], entries: Mapping[str, Mapping[str, Any]]) -> Optional[Dict[str, str]]:
    """{"module", "name"} of the algorithm class that saved the model, when the policy tells."""
    policy = entries.get("policy_class")
    globals_ = policy.get("globals", []) if policy else []
    module = globals_[0].rsplit(".", 1)[0] if globals_ else ""
    if module in ALGORITHMS:
        package, name = ALGORITHMS[module]
    elif module == "stable_baselines3.common.policies":
        if "cg_max_steps" in data:
            package, name = "sb3_contrib", "TRPO"
        elif "clip_range" in data:
            package, name = "stable_baselines3", "PPO"
        else:
            package, name = "stable_baselines3", "A2C"
    else:
        return None
    return {"module": package, "name": name}


def producer(info: Mapping[str, str], entries: List[Mapping[str, Any]]) -> Dict[str, Any]:
    """The producing Python: system_info.txt's, cross-checked with every pickled code object.

    `consistent` is None when system_info.txt names no Python version: nothing to agree with.
    """
    functions = [f for e in entries for f in e["functions"]]
    minor = bytecode.minor_of(info.get("python"))
    return {
        "system_info_python": info.get("python"),
        "minor": minor,
        "code_minors": sorted({f["producer_minor"] for f in functions if f["producer_minor"]}),
        "code_layouts": sorted({f["layout"] for f in functions}),
        "consistent": all(f["system_info_agrees"] for f in functions) if minor else None,
    }


def weights(model: ModelArchive) -> List[Dict[str, Any]]:
    """Each `.pth` member judged as torch.load(weights_only=True) would: "data" or "dangerous", with why."""
    judged = []
    for name in model.infos:
        if weights_only.is_pth(name):
            reasons = weights_only.member_reasons(model, name)
            judged.append({"name": name, "verdict": "dangerous" if reasons else "data", "reasons": reasons})
    return judged


def inspect_model(path: Path) -> Dict[str, Any]:
    """Every fact about the model at `path` that can be read without running it."""
    started = time.perf_counter()
    with ModelArchive(Path(path)) as model:
        info = system_info.parse(model.text(SYSTEM_INFO))
        minor = bytecode.minor_of(info.get("python"))
        budget = pickle_vm.Budget()
        entries = [classify.classify(key, value, minor, budget) for key, value in model.data.items() if serialized(value)]
        by_key = {e["key"]: e for e in entries}
        lr_reads: Dict[str, Optional[float]] = {}

        @lru_cache(maxsize=1)
        def optimizer_lr() -> Optional[float]:
            lr_reads["value"] = optimizer.last_learning_rate(model)
            return lr_reads["value"]

        plan = sb3_schedules.plan(model.data, by_key, {}, optimizer_lr)
        version = model.text(VERSION)
        return {
            "path": str(path),
            "file_bytes": Path(path).stat().st_size,
            "members": model.members(),
            "sb3_version": version.strip() if version else None,
            "system_info": info,
            "producer": producer(info, entries),
            "algorithm": algorithm(model.data, by_key),
            "plain_keys": sorted(k for k, v in model.data.items() if not serialized(v)),
            "unusable_numbers": {k: repr(model.data[k]) for k in sb3_schedules.SCHEDULE_KEYS if k in model.data and not serialized(model.data[k])
                                 and not sb3_schedules.plain_ok(k, model.data[k])},
            "entries": entries,
            "weights": weights(model),
            "schedules": plan,
            "optimizer_lr": lr_reads.get("value"),
            "elapsed_ms": round((time.perf_counter() - started) * 1000, 3),
        }
