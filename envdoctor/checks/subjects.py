"""What a domain's checks judge, and why it may be absent.

A CUDA check that finds nothing in an environment without torch has judged nothing; shown as passed,
it makes an environment without torch look healthy. So a check of a domain whose subject is absent
that finds nothing is recorded as skipped, with the subject's absence as the reason. One that does
find something (a crash while importing numpy, with no torch installed) keeps its finding.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping

from packaging.utils import canonicalize_name

from envdoctor.facts import view_of
from envdoctor.facts.target import TargetView


def recorded(facts: Mapping[str, Any], section: str, key: str) -> bool:
    """Whether the section holds `key`, so an absence in it is a fact rather than a gap in the facts."""
    value = facts.get(section)
    return isinstance(value, Mapping) and "error" not in value and key in value


def missing_distribution(facts: Mapping[str, Any], name: str) -> str:
    if not recorded(facts, "target", "distributions") or name in view_of(facts, TargetView).distributions:
        return ""
    return f"{name} is not installed"


def torch_absent(facts: Mapping[str, Any]) -> str:
    return missing_distribution(facts, "torch")


def nvidia_wheels_absent(facts: Mapping[str, Any]) -> str:
    """The wheel checks judge torch's pins and the NVIDIA wheels beside it; with neither there is nothing."""
    if any(canonicalize_name(name).startswith("nvidia-") for name in view_of(facts, TargetView).distributions):
        return ""
    return torch_absent(facts)


def gpu_absent(facts: Mapping[str, Any]) -> str:
    if not recorded(facts, "gpu", "gpus") or facts["gpu"]["gpus"]:
        return ""
    return "no NVIDIA GPU was found"


def without_proc(facts: Mapping[str, Any]) -> str:
    """Reports from before `has_proc` was recorded came from Linux hosts."""
    system = facts.get("system")
    if isinstance(system, Mapping) and system.get("has_proc") is False:
        return "this host has no /proc, so it runs no Linux or WSL kernel to judge"
    return ""


def memory_unknown(key: str, reason: str) -> Callable[[Mapping[str, Any]], str]:
    """`reason` where the memory fact `key` was recorded as unknown."""

    def unknown(facts: Mapping[str, Any]) -> str:
        return reason if recorded(facts, "memory", key) and facts["memory"][key] is None else ""

    return unknown


def conda_absent(facts: Mapping[str, Any]) -> str:
    target = facts.get("target")
    conda = target.get("conda") if isinstance(target, Mapping) else None
    if not isinstance(conda, Mapping) or "error" in conda or conda.get("prefix"):
        return ""
    return "not a conda environment"


# By domain, or by check id where only some of a domain's checks need what may be missing.
ABSENCES: Dict[str, Callable[[Mapping[str, Any]], str]] = {
    "wsl": without_proc,
    "memory.shm-small": memory_unknown("shm_total_bytes", "there is no /dev/shm (Linux's shared memory) here"),
    "memory.low-ram": memory_unknown("ram_total_bytes", "the RAM size is unknown (no /proc/meminfo, and psutil is not installed)"),
    "cuda": torch_absent,
    "probe": torch_absent,
    "wheels": nvidia_wheels_absent,
    "gpu": gpu_absent,
    "numpy": lambda facts: missing_distribution(facts, "numpy"),
    "conda": conda_absent,
}


def absence(check_id: str, facts: Mapping[str, Any]) -> str:
    """Why the subject of the check (or of its domain) is not there to be judged, or "" when it is
    (or the facts cannot tell)."""
    absent = ABSENCES.get(check_id) or ABSENCES.get(check_id.split(".", 1)[0])
    return absent(facts) if absent else ""
