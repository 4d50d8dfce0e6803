"""Reading the target's installed distributions for planning: what each one requires, and of which CUDA family.

Requirements are those in effect for the target (facts/requirements.py): markers evaluated for the
target's Python, an extra's requirements only when that extra is asked for. Deciding what to remove
also counts extras whose requirements are all installed (`pip install tensorflow[and-cuda]` leaves no
other trace): keeping a wheel someone may use is the safe side there.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Set, Tuple

from packaging.requirements import Requirement

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


def own_dependencies(graph: Mapping[str, Iterable[Requirement]], root: str) -> Set[str]:
    """Every installed distribution `root` needs, directly or through others."""
    found: Set[str] = set()
    todo = [root]
    while todo:
        for requirement in graph.get(todo.pop(), ()):
            name = normalize(requirement.name)
            if name in graph and name not in found and name != root:
                found.add(name)
                todo.append(name)
    return found


def leaves(facts: Mapping[str, Any]) -> Tuple[str, ...]:
    """The user's top-level packages: installed distributions no other installed one requires, less
    installer tools, the torch stack, NVIDIA wheels, and envdoctor with everything it needs (click,
    rich, jsonschema…: the doctor's dependencies, not the user's packages)."""
    graph = requirements_in_effect(target(facts))
    required = {normalize(r.name) for name, reqs in graph.items() if name != DOCTOR for r in reqs if normalize(r.name) != name}
    excluded = required | INSTALLER_TOOLS | TORCH_STACK | {DOCTOR} | own_dependencies(graph, DOCTOR)
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
