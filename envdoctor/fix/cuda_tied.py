"""Packages built for one CUDA family beside torch: they never go into an environment of another family.

Two kinds: those that say their family in their name (cupy-cuda12x, jax-cuda12-plugin, cupy-cuda117),
and those that require NVIDIA wheels of a family (numba-cuda[cu12], tensorflow[and-cuda]). Carried
into an environment pinned to another family, they load a second CUDA runtime into the process (the
mixed-families crash of docs/knowledge/domain-facts.md §3). A plan lists them with their counterpart
for the new family: the same name with the family's major, where the index has such a package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from envdoctor.fix.releases import ReleaseIndex
from envdoctor.fix.requires import TORCH_STACK, families_needed, target
from envdoctor.knowledge.wheels import cuda_family, family_of_major

NAMED_FAMILY = re.compile(r"(?<=[-_])cuda(?P<major>\d{2,3})(?=x\b|x$|[-_]|$)")


@dataclass(frozen=True)
class Tied:
    """An installed package of `family`, with its counterpart for the new family when there is one."""

    name: str
    version: str
    family: str
    counterpart: Optional[str]
    checked: bool
    by_name: bool  # a build for one family by its name (cupy-cuda12x), not a package that needs such wheels

    def requirement(self) -> Optional[str]:
        """The counterpart held to the installed major: "cupy-cuda11x>=13,<14"."""
        major = self.version.split(".", 1)[0]
        return f"{self.counterpart}>={major},<{int(major) + 1}" if self.counterpart and major.isdigit() else self.counterpart

    def describe(self, new_family: str) -> str:
        if self.counterpart is None:
            return f"{self.name} {self.version} ({self.family}): no {new_family} counterpart"
        unchecked = "" if self.checked else ", not looked up"
        return f"{self.name} {self.version} ({self.family}): for {new_family} install {self.counterpart}{unchecked}"


def named_family(name: str) -> Optional[str]:
    match = NAMED_FAMILY.search(name)
    return family_of_major(match.group("major")) if match else None


def counterpart(name: str, family: Optional[str], index: ReleaseIndex) -> Tuple[Optional[str], bool]:
    """(the name for `family`, whether the index confirmed it): "cupy-cuda12x" -> "cupy-cuda11x"."""
    match = NAMED_FAMILY.search(name)
    if match is None or not family:
        return None, True
    major = family[2:]
    if len(match.group("major")) == 3 and major == "11":
        return None, True  # cupy-cuda117 and the like name a minor too: no single counterpart
    candidate = name[: match.start("major")] + major + name[match.end("major"):]
    versions = index.versions(candidate)
    if versions is None:
        return candidate, False
    return (candidate if versions else None), True


def tied_packages(facts: Mapping[str, Any], new_family: Optional[str], index: ReleaseIndex) -> Dict[str, Tied]:
    """Installed non-NVIDIA packages tied to a CUDA family other than `new_family`, by normalized name."""
    dists = target(facts).distributions
    found: Dict[str, Tied] = {}
    by_requirement = {name: family for family, names in families_needed(facts, excluding=TORCH_STACK).items() for name in names}
    for name, dist in sorted(dists.items()):
        if cuda_family(name, dist.get("version")):
            continue
        family = named_family(name) or by_requirement.get(name)
        if family and family != new_family:
            other, checked = counterpart(str(dist.get("name") or name), new_family, index)
            found[name] = Tied(str(dist.get("name") or name), str(dist.get("version")), family, other, checked, named_family(name) is not None)
    return found
