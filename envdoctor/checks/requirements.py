"""Requirements consistency, judged as `pip check` judges it but for the diagnosed interpreter, and
the dependency graph the fix planners read.

A requirement is in effect when its marker holds for the target's Python and platform and, behind an
extra, when an installed distribution asks for that extra (`pkg[x]`). Python imports whatever is
installed: a package run against a version of a dependency it does not accept fails at import or,
for a compiled one, crashes (scipy 1.11 built for NumPy 1 under NumPy 2). torch's CUDA pins are left
to `wheels.torch-pins`, which judges them with more care.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple

from packaging.requirements import InvalidRequirement, Requirement

from envdoctor.checks import check
from envdoctor.checks.facts import distributions, normalize, parse_version
from envdoctor.checks.wheels import applies, installer_command, marker_environment, pin_problems, requirement_text
from envdoctor.model import Finding, Remedy, Severity

STACK = frozenset({"torch", "torchvision", "torchaudio", "triton", "numpy", "stable-baselines3", "sb3-contrib", "gymnasium"})
CORE = frozenset({"numpy", "torch"})
EXTRA_CONDITION = re.compile(r"""\bextra\s*==\s*['"]([^'"]+)['"]""")

Graph = Dict[str, List[Requirement]]
Unmet = Tuple[Requirement, Optional[str]]


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


def extras_of(requirements: Iterable[Requirement]) -> Set[str]:
    """The extras that some of `requirements` are conditioned on."""
    return {normalize(extra) for r in requirements if r.marker is not None for extra in EXTRA_CONDITION.findall(str(r.marker))}


def own_requirements(requirements: Iterable[Requirement], environment: Mapping[str, str], extra: str) -> List[Requirement]:
    """What asking for `extra` adds to the distribution's plain requirements."""
    return [r for r in requirements if applies(r, environment, (extra,)) and not applies(r, environment)]


def installed_extras(parsed: Graph, environment: Mapping[str, str]) -> Dict[str, Set[str]]:
    """Extras whose every added requirement is installed: `pip install tensorflow[and-cuda]` leaves no
    other trace, and a planner that removes things must assume such an extra is in use."""
    found: Dict[str, Set[str]] = {}
    for name, requirements in parsed.items():
        for extra in extras_of(requirements):
            added = own_requirements(requirements, environment, extra)
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


def requirements_in_effect(facts: Mapping[str, Any], assume_installed_extras: bool = False) -> Graph:
    """Installed name -> its requirements in effect for the target; with `assume_installed_extras`,
    also those of extras whose requirements are all installed (the safe side before removing anything)."""
    environment = marker_environment(facts)
    parsed = {name: parsed_requirements(dist) for name, dist in distributions(facts).items()}
    seeds = installed_extras(parsed, environment) if assume_installed_extras else {}
    extras = requested_extras(parsed, environment, seeds)
    return {name: [r for r in requirements if applies(r, environment, extras.get(name, ()))] for name, requirements in parsed.items()}


def satisfied(requirement: Requirement, dist: Optional[Mapping[str, Any]]) -> bool:
    """pip check's rule: installed, at a version the specifier contains (pre-releases allowed); a
    version that does not parse is not judged."""
    if dist is None:
        return False
    version = parse_version(dist.get("version"))
    return version is None or requirement.specifier.contains(version, prereleases=True)


def unmet_requirements(facts: Mapping[str, Any]) -> Dict[str, List[Unmet]]:
    """Requirer -> its requirements in effect that the installed versions do not satisfy, with the
    installed version (None: not installed)."""
    installed = distributions(facts)
    judged_elsewhere = [p.requirement for p in pin_problems(facts)]
    unmet: Dict[str, List[Unmet]] = {}
    for requirer, requirements in sorted(requirements_in_effect(facts).items()):
        for requirement in requirements:
            dist = installed.get(normalize(requirement.name))
            if not satisfied(requirement, dist) and requirement not in judged_elsewhere:
                unmet.setdefault(requirer, []).append((requirement, dist.get("version") if dist else None))
    return unmet


def install_argument(requirement: Requirement) -> str:
    return requirement_text(requirement) + (f" @ {requirement.url}" if requirement.url else "")


def describe(requirement: Requirement, version: Optional[str]) -> str:
    return f"{install_argument(requirement)} ({f'{version} is installed' if version else 'not installed'})"


def severity(requirer: str, unmet: List[Unmet]) -> Severity:
    """An error inside the torch/SB3/NumPy stack or when numpy or torch is the one missing or
    mismatched: those break the training process itself."""
    names = {normalize(r.name) for r, _ in unmet}
    return Severity.ERROR if requirer in STACK or names & CORE else Severity.WARNING


def remedies(facts: Mapping[str, Any], name: str, unmet: List[Unmet]) -> Tuple[Remedy, ...]:
    """Install what it accepts; where a version conflicts, upgrading the requirer is the other way."""
    accepted = Remedy(f"Install versions {name} accepts:", installer_command(facts, "install", [install_argument(r) for r, _ in unmet]))
    if all(version is None for _, version in unmet):
        return (accepted,)
    upgrade = Remedy(f"Or upgrade {name} to a release that accepts what is installed:", installer_command(facts, "install", ["--upgrade", name]))
    return accepted, upgrade


def unmet_finding(facts: Mapping[str, Any], requirer: str, unmet: List[Unmet]) -> Finding:
    dist = distributions(facts)[requirer]
    name, version = dist["name"], dist.get("version", "")
    return Finding(
        id="requirements.unsatisfied",
        severity=severity(requirer, unmet),
        title=f"{name} {version} requires {'; '.join(describe(r, v) for r, v in unmet)}",
        explanation=(
            f"{name}'s metadata asks for versions that are not installed. Python imports whatever is installed, so {name} "
            "runs against a dependency it does not accept: it fails at import or, when compiled against another release "
            "(NumPy 1 vs 2), crashes. This is what `python -m pip check` verifies, with the extras installed packages ask for."
        ),
        evidence={
            "requirer": f"{name} {version}",
            "unsatisfied": [{"requirement": install_argument(r), "installed": v} for r, v in unmet],
        },
        remedies=remedies(facts, name, unmet),
        references=("https://pip.pypa.io/en/stable/cli/pip_check/",),
    )


@check("requirements.unsatisfied", "Installed distributions whose requirements the installed versions do not satisfy (pip check, for the target)", requires=("target",))
def unsatisfied(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for requirer, unmet in unmet_requirements(facts).items():
        yield unmet_finding(facts, requirer, unmet)
