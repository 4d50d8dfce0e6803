"""Typed views over the raw facts, shared by the checks so each reads them the same way."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from packaging.utils import canonicalize_name as normalize
from packaging.version import InvalidVersion, Version


def distributions(facts: Mapping[str, Any]) -> dict:
    """The target's installed distributions by normalized name."""
    return {normalize(d["name"]): d for d in facts.get("target", {}).get("distributions", ())}


def parse_version(text: Optional[str]) -> Optional[Version]:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def installed_version(facts: Mapping[str, Any], name: str) -> Optional[Version]:
    dist = distributions(facts).get(normalize(name))
    return parse_version(dist["version"]) if dist else None


def variables(facts: Mapping[str, Any]) -> dict:
    return facts.get("environ", {}).get("variables", {})


def usable_cpus(facts: Mapping[str, Any]) -> Optional[int]:
    return facts.get("cpu", {}).get("usable_cpus")

