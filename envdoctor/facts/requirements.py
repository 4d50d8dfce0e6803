"""The target's dependency graph: the requirements in effect for the diagnosed interpreter.

A requirement is in effect when its marker holds for the target's Python and platform and, behind an
extra, when an installed distribution asks for that extra (`pkg[x]`). The requirements checks and the
fix planners read the same graph.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Mapping, Set

from packaging.requirements import InvalidRequirement, Requirement

from envdoctor.facts.target import TargetView, normalize

EXTRA_CONDITION = re.compile(r"""\bextra\s*==\s*['"]([^'"]+)['"]""")

Graph = Dict[str, List[Requirement]]


def applies(requirement: Requirement, environment: Mapping[str, str], extras: Iterable[str] = ()) -> bool:
    """Whether the requirement's marker holds for `environment`, without an extra or with one of
    `extras`; a marker that cannot be evaluated (an undefined comparison) holds for no one."""
    if requirement.marker is None:
        return True
    try:
        return any(requirement.marker.evaluate({**environment, "extra": extra}) for extra in ("", *extras))
    except ValueError:
        return False


def parsed_requirements(dist: Mapping[str, Any]) -> List[Requirement]:
    """The Requires-Dist lines that parse; one that does not (or a recorded report's non-text) is no
    verdict about this environment."""
    lines = dist.get("requires")
    found = []
    for line in lines if isinstance(lines, list) else ():
        try:
            found.append(Requirement(line if isinstance(line, str) else ""))
        except InvalidRequirement:
            continue
    return found


def named_extras(requirement: Requirement) -> Set[str]:
    """The extras the requirement's marker names: only asking for one of them can change whether it holds."""
    return {normalize(extra) for extra in EXTRA_CONDITION.findall(str(requirement.marker))} if requirement.marker is not None else set()


def installed_extras(parsed: Graph, environment: Mapping[str, str]) -> Dict[str, Set[str]]:
    """Extras whose every added requirement is installed: `pip install tensorflow[and-cuda]` leaves no
    other trace, and a planner that removes things must assume such an extra is in use. What an extra
    adds is looked for among the requirements that name it (a distribution with 40 extras and 300
    requirements costs its 300 markers, not 12,000)."""
    found: Dict[str, Set[str]] = {}
    for name, requirements in parsed.items():
        named = [(requirement, named_extras(requirement)) for requirement in requirements]
        for extra in set().union(*(extras for _, extras in named)):
            added = [r for r, extras in named if extra in extras and applies(r, environment, (extra,)) and not applies(r, environment)]
            if added and all(normalize(r.name) in parsed for r in added):
                found.setdefault(name, set()).add(extra)
    return found


def requested_extras(parsed: Graph, environment: Mapping[str, str], seeds: Mapping[str, Set[str]]) -> Dict[str, Set[str]]:
    """Name -> extras in effect: `seeds`, plus every `pkg[x]` asked for by a requirement in effect,
    followed until nothing new is asked (an extra may ask for further extras)."""
    requested = {name: set(extras) for name, extras in seeds.items()}
    changed = True
    while changed:
        changed = False
        for name, requirements in parsed.items():
            for requirement in requirements:
                if not requirement.extras or not applies(requirement, environment, requested.get(name, ())):
                    continue
                wanted = requested.setdefault(normalize(requirement.name), set())
                new = {normalize(e) for e in requirement.extras} - wanted
                changed = changed or bool(new)
                wanted |= new
    return requested


def requirements_in_effect(target: TargetView, assume_installed_extras: bool = False) -> Graph:
    """Installed name -> its requirements in effect for the target; with `assume_installed_extras`,
    also those of extras whose requirements are all installed (the safe side before removing anything)."""
    environment = target.marker_environment()
    parsed = {name: parsed_requirements(dist) for name, dist in target.distributions.items()}
    seeds = installed_extras(parsed, environment) if assume_installed_extras else {}
    extras = requested_extras(parsed, environment, seeds)
    return {name: [r for r in requirements if applies(r, environment, extras.get(name, ()))] for name, requirements in parsed.items()}
