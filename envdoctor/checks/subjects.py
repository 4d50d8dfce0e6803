"""What a domain's checks judge, and why it may be absent.

A CUDA check that finds nothing in an environment without torch has judged nothing; shown as passed,
it makes an environment without torch look healthy. So a check of a domain whose subject is absent
that finds nothing is recorded as skipped, with the subject's absence as the reason. One that does
find something (a crash while importing numpy, with no torch installed) keeps its finding.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping

from packaging.utils import canonicalize_name

from envdoctor.checks.facts import distributions

def recorded(facts: Mapping[str, Any], section: str, key: str) -> bool:
    """Whether the section holds `key`, so an absence in it is a fact rather than a gap in the facts."""
    value = facts.get(section)
    return isinstance(value, Mapping) and "error" not in value and key in value


def missing_distribution(facts: Mapping[str, Any], name: str) -> str:
    if not recorded(facts, "target", "distributions") or name in distributions(facts):
        return ""
    return f"{name} is not installed"


def torch_absent(facts: Mapping[str, Any]) -> str:
    return missing_distribution(facts, "torch")


def nvidia_wheels_absent(facts: Mapping[str, Any]) -> str:
    """The wheel checks judge torch's pins and the NVIDIA wheels beside it; with neither there is nothing."""
    if any(canonicalize_name(name).startswith("nvidia-") for name in distributions(facts)):
        return ""
    return torch_absent(facts)


def gpu_absent(facts: Mapping[str, Any]) -> str:
    if not recorded(facts, "gpu", "gpus") or facts["gpu"]["gpus"]:
        return ""
    return "no NVIDIA GPU was found"


ABSENCES: Dict[str, Callable[[Mapping[str, Any]], str]] = {
    "cuda": torch_absent,
    "probe": torch_absent,
    "wheels": nvidia_wheels_absent,
    "gpu": gpu_absent,
    "numpy": lambda facts: missing_distribution(facts, "numpy"),
}


def absence(domain: str, facts: Mapping[str, Any]) -> str:
    """Why the subject of `domain` is not there to be judged, or "" when it is (or the facts cannot tell)."""
    absent = ABSENCES.get(domain)
    return absent(facts) if absent else ""
