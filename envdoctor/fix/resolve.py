"""The versions a pin leaves behind: every installed package the new torch breaks is put back or said lost.

Pinning torch (and NumPy below 2 for a torch built against NumPy 1) can break what pins the old ones:
stable-baselines3 2.7 requires torch>=2.3, sb3-contrib 2.7 requires stable-baselines3>=2.7. Each such
package is put back at the newest release whose own metadata (Requires-Dist, Requires-Python) admits
everything already decided, in the installed major when one does; what that release requires in turn
may move a further package, and so on until nothing clashes. A package no release admits is lost, with
the reason. Without an index (offline) nothing can be looked up: the package is put back by its
installed major, the installer picks the version, and the plan says it assumed so.

This is a small greedy resolver for the plan's words, not pip's: the installer's own dry run
(fix/dry_run.py) is the judge of the line it produces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from envdoctor.facts.requirements import applies, parsed_lines, requirements_in_effect
from envdoctor.facts.target import normalize
from envdoctor.fix.plan import PackageChange
from envdoctor.fix.releases import Release, ReleaseIndex
from envdoctor.fix.requires import target

MAX_ROUNDS = 20
MAX_LOOKUPS = 40  # release metadata read per package before it is called lost


def major_range(version: Version) -> str:
    """ "2.7.1" -> ">=2,<3": the user's major, which a put-back keeps when it can."""
    return f">={version.major},<{version.major + 1}"


@dataclass
class Resolver:
    """The decisions so far: versions fixed by the pin and by put-backs, ranges put-backs ask of
    others, and what is lost."""

    index: ReleaseIndex
    python: Version
    environment: Mapping[str, str]
    installed: Dict[str, Version]
    names: Dict[str, str]
    fixed: Dict[str, Version]
    fixed_why: Dict[str, str]
    unreleased: Mapping[str, str]

    def __post_init__(self):
        self.needs: Dict[str, List[Tuple[SpecifierSet, str]]] = {}
        self.changes: Dict[str, PackageChange] = {}

    def clash(self, requirements: Iterable[Requirement]) -> Optional[str]:
        """Why these requirements (in effect here) cannot hold beside the decisions, or None."""
        for requirement in requirements:
            name = normalize(requirement.name)
            if not applies(requirement, self.environment):
                continue
            if name in self.changes and self.changes[name].lost:
                return f"it requires {requirement.name}, which will be lost"
            if name in self.fixed and not requirement.specifier.contains(self.fixed[name], prereleases=True):
                return f"it requires {requirement.name}{requirement.specifier} and {self.fixed_why[name]}"
        return None

    def on_assumed(self, requirements: Iterable[Requirement]) -> Optional[str]:
        """Why these requirements depend on a package put back without a looked-up version, or None:
        such a dependent cannot be looked up either."""
        for requirement in requirements:
            change = self.changes.get(normalize(requirement.name))
            if change is not None and change.assumed and applies(requirement, self.environment):
                return f"it requires {requirement.name}{requirement.specifier}, and {change.name} is put back by its major only"
        return None

    def admits(self, release: Release) -> Optional[str]:
        """Why `release` does not fit, or None."""
        if not release.supports_python(self.python):
            return f"it requires Python {release.requires_python}"
        for specifier, why in self.needs.get(release.name, ()):
            if not specifier.contains(release.version, prereleases=True):
                return why
        return self.clash(parsed_lines(release.requires))

    def candidates(self, name: str, versions: List[Version]) -> List[Version]:
        """The installed major's releases first, newest first, then the others, newest first."""
        major = SpecifierSet(major_range(self.installed[name]))
        return [v for v in versions if v in major] + [v for v in versions if v not in major]

    def put_back(self, name: str, because: str) -> None:
        shown, installed = self.names.get(name, name), self.installed[name]
        if name in self.unreleased:
            self.changes[name] = PackageChange(shown, str(installed), None, "", f"{because}, and {self.unreleased[name]}")
            return
        versions = self.index.versions(name)
        if versions is None:
            self.assume(name, f"{because}; assumed: a release in its major admits the new stack ({self.index.where})")
            return
        first_refusal, read = None, 0
        for version in self.candidates(name, versions)[:MAX_LOOKUPS]:
            release = self.index.release(name, version)
            if release is None:
                continue
            read += 1
            refusal = self.admits(release)
            if refusal is None:
                moved = "" if version.major == installed.major else f"; no release of major {installed.major} fits, so the major changes"
                self.changes[name] = PackageChange(shown, str(installed), str(version), f"{shown}=={version}", f"{because}; {version} is the newest release whose metadata admits the new stack ({self.index.where}){moved}")
                self.fixed[name], self.fixed_why[name] = version, f"{shown} is put back at {version}"
                for requirement in parsed_lines(release.requires):
                    if applies(requirement, self.environment):
                        self.needs.setdefault(normalize(requirement.name), []).append((requirement.specifier, f"{shown} {version} requires {requirement.name}{requirement.specifier}"))
                return
            first_refusal = first_refusal or f"{version}: {refusal}"
        if not read:
            self.assume(name, f"{because}; assumed: a release in its major admits the new stack ({self.index.where} gave no metadata of its releases)")
            return
        self.changes[name] = PackageChange(shown, str(installed), None, "", f"{because}, and no release in {self.index.where} fits the new stack (newest looked at, {first_refusal})")

    def assume(self, name: str, why: str) -> None:
        """Put back by the installed major, the version left to the installer: nothing could be looked up."""
        shown, installed = self.names.get(name, name), self.installed[name]
        self.changes[name] = PackageChange(shown, str(installed), None, f"{shown}{major_range(installed)}", why)

    def conflicts(self, graph: Mapping[str, List[Requirement]], skip: Iterable[str]) -> Dict[str, str]:
        """Installed packages, not yet decided, that clash with the decisions."""
        skipped = set(skip) | set(self.fixed) | set(self.changes)
        found = {}
        for name, requirements in sorted(graph.items()):
            if name in skipped or name not in self.installed:
                continue
            leaning = self.on_assumed(requirements)
            if leaning is not None:
                self.assume(name, f"{leaning}; assumed: a release in its major fits it")
                continue
            why = self.clash(requirements)
            if why is None:
                why = next((w for s, w in self.needs.get(name, ()) if not s.contains(self.installed[name], prereleases=True)), None)
            if why is not None:
                found[name] = why
        return found


def resolve(
    facts: Mapping[str, Any],
    pins: Mapping[str, Tuple[Version, str]],
    python: Version,
    index: ReleaseIndex,
    skip: Iterable[str] = (),
    unreleased: Optional[Mapping[str, str]] = None,
) -> Tuple[PackageChange, ...]:
    """The installed packages (less `skip`) that `pins` (name -> (version, why)) move, and where to;
    `unreleased` names packages known to have no release for the new stack, with why."""
    view = target(facts)
    environment = {**view.marker_environment(), "python_version": f"{python.major}.{python.minor}", "python_full_version": str(python)}
    installed, names = {}, {}
    for name, dist in view.distributions.items():
        try:
            installed[name], names[name] = Version(str(dist.get("version"))), str(dist.get("name") or name)
        except InvalidVersion:
            continue
    resolver = Resolver(index, python, environment, installed, names, {n: v for n, (v, _) in pins.items()}, {n: w for n, (_, w) in pins.items()}, {normalize(n): w for n, w in (unreleased or {}).items()})
    graph = requirements_in_effect(view)
    skipped = {normalize(n) for n in skip}
    for _ in range(MAX_ROUNDS):
        found = resolver.conflicts(graph, skipped)
        if not found:
            break
        for name, why in found.items():
            resolver.put_back(name, why)
    return tuple(resolver.changes[n] for n in sorted(resolver.changes))
