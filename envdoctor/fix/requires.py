"""Reading the target's installed distributions for planning: what each one requires, and of which CUDA family.

Markers are evaluated for the target's Python, not the doctor's. A requirement behind an extra counts
as needed when `with_extras` is set: the facts do not say which extras were installed, and keeping a
wheel someone may use is the safe side when deciding what to remove.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor.checks.facts import distributions, normalize
from envdoctor.checks.wheels import marker_environment
from envdoctor.knowledge.wheels import cuda_family


def target(facts: Mapping[str, Any]) -> Mapping[str, Any]:
    return facts.get("target", {})


def python_minor(facts: Mapping[str, Any]) -> str:
    major, minor = target(facts).get("python", {}).get("version_info", [0, 0])[:2]
    return f"{major}.{minor}"


def requirements(dist: Mapping[str, Any], environment: Mapping[str, str], with_extras: bool) -> List[Requirement]:
    """The requirements of `dist` that apply to the target; unparsable lines are ignored."""
    found = []
    for line in dist.get("requires", ()):
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        marker = requirement.marker
        if marker is None or marker.evaluate(dict(environment)) or (with_extras and "extra" in str(marker)):
            found.append(requirement)
    return found


def families_needed(facts: Mapping[str, Any], excluding: Iterable[str] = ()) -> Dict[str, Tuple[str, ...]]:
    """CUDA family -> the (non-NVIDIA) distributions that require a wheel of it."""
    environment, skip = marker_environment(facts), {normalize(n) for n in excluding}
    needed: Dict[str, List[str]] = {}
    for name, dist in distributions(facts).items():
        if name in skip or cuda_family(name):
            continue
        for requirement in requirements(dist, environment, with_extras=True):
            family = cuda_family(requirement.name)
            if family and name not in needed.setdefault(family, []):
                needed[family].append(name)
    return {family: tuple(sorted(names)) for family, names in needed.items()}


def families_installed(facts: Mapping[str, Any]) -> Dict[str, Tuple[str, ...]]:
    """CUDA family -> the installed NVIDIA wheels of it."""
    found: Dict[str, List[str]] = {}
    for name, dist in distributions(facts).items():
        family = cuda_family(name, dist.get("version"))
        if family:
            found.setdefault(family, []).append(name)
    return {family: tuple(sorted(names)) for family, names in sorted(found.items())}


def torch_pin(dist: Mapping[str, Any], environment: Mapping[str, str]) -> Optional[SpecifierSet]:
    """The specifier `dist` puts on torch, if it requires torch at all."""
    for requirement in requirements(dist, environment, with_extras=False):
        if normalize(requirement.name) == "torch":
            return requirement.specifier
    return None


def pinning_other_torch(facts: Mapping[str, Any], torch_version: str, replaced: Iterable[str]) -> Dict[str, str]:
    """Installed distributions whose torch requirement excludes `torch_version`, with that requirement."""
    environment, skip = marker_environment(facts), {"torch", *(normalize(n) for n in replaced)}
    try:
        version = Version(torch_version)
    except InvalidVersion:
        return {}
    found = {}
    for name, dist in distributions(facts).items():
        specifier = None if name in skip else torch_pin(dist, environment)
        if specifier is not None and not specifier.contains(version, prereleases=True):
            found[name] = f"torch{specifier}"
    return found
