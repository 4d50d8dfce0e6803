"""The target's dependency graph: the requirements in effect for the diagnosed interpreter.

A requirement is in effect when its marker holds for the target's Python and platform and, behind an
extra, when an installed distribution asks for that extra (`pkg[x]`). The requirements checks and the
fix planners read the same graph.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple

from packaging.requirements import InvalidRequirement, Requirement

from envdoctor.facts.target import TargetView, normalize

EXTRA_CONDITION = re.compile(r"""\bextra\s*==\s*['"]([^'"]+)['"]""")
# A Requires-Dist line whose marker is only `extra == "name"`: most lines of a large environment.
BEHIND_EXTRA = re.compile(r"""^[^;]*;\s*extra\s*==\s*(["'])([A-Za-z0-9._-]+)\1\s*$""")

Graph = Dict[str, List[Requirement]]


def applies(requirement: Requirement, environment: Mapping[str, str], extras: Iterable[str] = ()) -> bool:
    """Whether the requirement's marker holds for `environment`, without an extra or with one of
    `extras`; a marker that cannot be evaluated (an undefined comparison) holds for no one."""
    return markers(environment).applies(requirement, extras)


def markers(environment: Mapping[str, str]) -> "Markers":
    """The one Markers of `environment` in this process: a check judges the same markers in the wheel,
    NumPy and requirements checks, and a fix plan in its graph, the extras installed and its leaves."""
    return shared_markers(tuple(sorted(environment.items())))


@functools.lru_cache(maxsize=8)
def shared_markers(environment: Tuple[Tuple[str, str], ...]) -> "Markers":
    return Markers(dict(environment))


class Markers:
    """Markers judged for one environment, each (requirement, extra) once: building the graph asks
    the same marker again for every extra and every pass (thousands of times for one fix plan)."""

    def __init__(self, environment: Mapping[str, str]):
        self.environment = environment
        self.known: Dict[tuple, tuple] = {}
        self.named: Dict[int, tuple] = {}

    def applies(self, requirement: Requirement, extras: Iterable[str] = ()) -> bool:
        """`applies` for this environment."""
        return requirement.marker is None or any(self.holds(requirement, extra) for extra in ("", *self.deciding(requirement, extras)))

    def deciding(self, requirement: Requirement, extras: Iterable[str]) -> Iterable[str]:
        """The extras among `extras` that can make the marker hold where no extra does: those it names
        in `extra == "..."` (a line of cuda-toolkit under twenty asked-for extras is judged for its own),
        or all of them when it speaks of `extra` in any other way."""
        if id(requirement) not in self.named:
            named, by_name_only = extras_named(requirement)
            self.named[id(requirement)] = (requirement, named if by_name_only else None)
        named = self.named[id(requirement)][1]
        return extras if named is None else [extra for extra in extras if normalize(extra) in named]

    def holds(self, requirement: Requirement, extra: str) -> bool:
        key = (id(requirement), extra)
        if key not in self.known:  # the requirement is kept with its outcome, so its id is never reused here
            self.known[key] = (requirement, self.evaluated(requirement, extra))
        return self.known[key][1]

    def evaluated(self, requirement: Requirement, extra: str) -> bool:
        try:
            return requirement.marker.evaluate({**self.environment, "extra": extra})
        except ValueError:
            return False


@functools.lru_cache(maxsize=2**16)
def parsed_line(line: str) -> Optional[Requirement]:
    """One Requires-Dist line parsed, or None; once per process, since a fix plan reads the same
    graph several times (hundreds of lines each). Nothing changes a Requirement once parsed."""
    try:
        return Requirement(line)
    except InvalidRequirement:
        return None


def requires_lines(dist: Mapping[str, Any]) -> List[str]:
    """The distribution's Requires-Dist lines that are text (a recorded report's other values are none)."""
    lines = dist.get("requires")
    return [line for line in lines if isinstance(line, str)] if isinstance(lines, list) else []


def parsed_lines(lines: Iterable[str]) -> List[Requirement]:
    """The lines that parse as requirements; one that does not is no verdict about this environment."""
    return [requirement for requirement in map(parsed_line, lines) if requirement is not None]


def parsed_requirements(dist: Mapping[str, Any]) -> List[Requirement]:
    """The distribution's Requires-Dist lines that parse."""
    return parsed_lines(requires_lines(dist))


def possible_requirements(dist: Mapping[str, Any], extras: Set[str]) -> List[Requirement]:
    """`parsed_requirements` less the lines behind one extra that is not among `extras`: such a line
    cannot hold (as its marker would say), and is left unparsed, which is most of the cost of a graph."""
    return parsed_lines(line for line in requires_lines(dist) if not behind_another_extra(line, extras))


def behind_another_extra(line: str, extras: Set[str]) -> bool:
    behind = BEHIND_EXTRA.match(line)
    return behind is not None and normalize(behind.group(2)) not in extras


def extras_named(requirement: Requirement) -> Tuple[Set[str], bool]:
    """The extras the requirement's marker names in `extra == "..."`, and whether that is all it says of
    `extra`: then only asking for one of them can change whether it holds."""
    if requirement.marker is None:
        return set(), True
    text = str(requirement.marker)
    found = EXTRA_CONDITION.findall(text)
    return {normalize(name) for name in found}, text.count("extra") == len(found)


def installed_extras(parsed: Graph, judged: Markers) -> Dict[str, Set[str]]:
    """Extras whose every added requirement is installed: `pip install tensorflow[and-cuda]` leaves no
    other trace, and a planner that removes things must assume such an extra is in use. What an extra
    adds is looked for among the requirements that name it (a distribution with 40 extras and 300
    requirements costs its 300 markers, not 12,000)."""
    found: Dict[str, Set[str]] = {}
    for name, requirements in parsed.items():
        named = [(requirement, extras_named(requirement)[0]) for requirement in requirements]
        for extra in set().union(*(extras for _, extras in named)):
            added = [r for r, extras in named if extra in extras and judged.applies(r, (extra,)) and not judged.applies(r)]
            if added and all(normalize(r.name) in parsed for r in added):
                found.setdefault(name, set()).add(extra)
    return found


def requested_extras(distributions: Mapping[str, Mapping[str, Any]], judged: Markers, seeds: Mapping[str, Set[str]]) -> Dict[str, Set[str]]:
    """Name -> extras in effect: `seeds`, plus every `pkg[x]` asked for by a requirement in effect,
    followed until nothing new is asked (an extra may ask for further extras)."""
    requested = {name: set(extras) for name, extras in seeds.items()}
    changed = True
    while changed:
        changed = False
        for name, dist in distributions.items():
            for requirement in possible_requirements(dist, requested.get(name, set())):
                if not requirement.extras or not judged.applies(requirement, requested.get(name, ())):
                    continue
                wanted = requested.setdefault(normalize(requirement.name), set())
                new = {normalize(e) for e in requirement.extras} - wanted
                changed = changed or bool(new)
                wanted |= new
    return requested


def requirements_in_effect(target: TargetView, assume_installed_extras: bool = False) -> Graph:
    """Installed name -> its requirements in effect for the target; with `assume_installed_extras`,
    also those of extras whose requirements are all installed (the safe side before removing anything)."""
    judged = markers(target.marker_environment())
    distributions = target.distributions
    seeds = installed_extras({name: parsed_requirements(dist) for name, dist in distributions.items()}, judged) if assume_installed_extras else {}
    extras = requested_extras(distributions, judged, seeds)
    return {
        name: [r for r in possible_requirements(dist, extras.get(name, set())) if judged.applies(r, extras.get(name, ()))]
        for name, dist in distributions.items()
    }
