"""Reading the target's installed distributions for planning: what each one requires, and of which CUDA family.

Requirements are those in effect for the target (facts/requirements.py): markers evaluated for the
target's Python, an extra's requirements only when that extra is asked for. Deciding what to remove
also counts extras whose requirements are all installed (`pip install tensorflow[and-cuda]` leaves no
other trace): keeping a wheel someone may use is the safe side there.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor.facts import view_of
from envdoctor.facts.requirements import requirements_in_effect
from envdoctor.facts.target import TargetView, normalize
from envdoctor.knowledge.wheels import cuda_family

INSTALLER_TOOLS = frozenset({"pip", "setuptools", "wheel", "distribute", "uv"})
TORCH_STACK = frozenset({"torch", "torchvision", "torchaudio", "triton", "cuda-toolkit"})  # the plan installs these itself
DOCTOR = "envdoctor"


def target(facts: Mapping[str, Any]) -> TargetView:
    """The target view the planners read (an empty one where the facts have none)."""
    return view_of(facts, TargetView)


def leaves(facts: Mapping[str, Any]) -> Tuple[str, ...]:
    """The user's top-level packages: installed distributions no other installed one requires, less
    installer tools, the torch stack, NVIDIA wheels and envdoctor. envdoctor's own requirements hide
    nothing: a package it needs (rich, click) may be one the user installed too, and reinstalling
    one too many beats losing one."""
    graph = requirements_in_effect(target(facts))
    required = {normalize(r.name) for name, reqs in graph.items() if name != DOCTOR for r in reqs if normalize(r.name) != name}
    excluded = required | INSTALLER_TOOLS | TORCH_STACK | {DOCTOR}
    dists = target(facts).distributions
    return tuple(dists[name]["name"] for name in sorted(dists) if name not in excluded and not cuda_family(name))


def families_needed(facts: Mapping[str, Any], excluding: Iterable[str] = ()) -> Dict[str, Tuple[str, ...]]:
    """CUDA family -> the (non-NVIDIA) distributions that require a wheel of it."""
    skip = {normalize(n) for n in excluding}
    needed: Dict[str, List[str]] = {}
    for name, requirements in requirements_in_effect(target(facts), assume_installed_extras=True).items():
        if name in skip or cuda_family(name):
            continue
        for requirement in requirements:
            family = cuda_family(requirement.name)
            if family and name not in needed.setdefault(family, []):
                needed[family].append(name)
    return {family: tuple(sorted(names)) for family, names in needed.items()}


def families_installed(facts: Mapping[str, Any]) -> Dict[str, Tuple[str, ...]]:
    """CUDA family -> the installed NVIDIA wheels of it."""
    found: Dict[str, List[str]] = {}
    for name, dist in target(facts).distributions.items():
        family = cuda_family(name, dist.get("version"))
        if family:
            found.setdefault(family, []).append(name)
    return {family: tuple(sorted(names)) for family, names in sorted(found.items())}


def torch_pin(requirements: Iterable[Requirement]) -> Optional[SpecifierSet]:
    """The specifier these requirements put on torch, if they require torch at all."""
    for requirement in requirements:
        if normalize(requirement.name) == "torch":
            return requirement.specifier
    return None


def pinning_other_torch(facts: Mapping[str, Any], torch_version: str, replaced: Iterable[str]) -> Dict[str, str]:
    """Installed distributions whose torch requirement excludes `torch_version`, with that requirement."""
    skip = {"torch", *(normalize(n) for n in replaced)}
    try:
        version = Version(torch_version)
    except InvalidVersion:
        return {}
    found = {}
    for name, requirements in requirements_in_effect(target(facts)).items():
        specifier = None if name in skip else torch_pin(requirements)
        if specifier is not None and not specifier.contains(version, prereleases=True):
            found[name] = f"torch{specifier}"
    return found
