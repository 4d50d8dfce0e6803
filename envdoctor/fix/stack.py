"""The whole set of versions a `--pin-cuda` plan installs: the torch pins, what they imply, and the put-backs.

A torch built against NumPy 1 (before 2.3) breaks beside NumPy 2 (docs/knowledge/domain-facts.md §8),
so the line holds `numpy<2` for it, and an installed NumPy 2 counts as moved to the last NumPy 1 when
the resolver (fix/resolve.py) looks for packages the pin breaks. The result is one requirement list,
so torch, its constraints and every package put back are decided by the installer in one run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, Mapping, Optional, Sequence, Tuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

from envdoctor.fix.releases import ReleaseIndex
from envdoctor.fix.requires import target
from envdoctor.fix.plan import PackageChange
from envdoctor.fix.resolve import resolve
from envdoctor.knowledge.numpy2 import LAST_NUMPY_1, torch_needs_numpy_1
from envdoctor.knowledge.torch_matrix import TorchRelease, install_args, variant_tag

NUMPY_1 = "numpy<2"
COMPANIONS = ("torchvision", "torchaudio")


@dataclass(frozen=True)
class Stack:
    """The requirements of the install line (pins, constraints, put-backs) and what they change."""

    requirements: Tuple[str, ...]
    changes: Tuple[PackageChange, ...]
    notes: Tuple[str, ...]

    @property
    def lost(self) -> Tuple[str, ...]:
        return tuple(c.name for c in self.changes if c.lost)

    @property
    def planned_versions(self) -> Dict[str, str]:
        """name -> the exact version the line asks for."""
        return dict(r.split("==", 1) for r in self.requirements if "==" in r)


def index_flags(release: TorchRelease, cuda: str, stack: "Stack") -> Tuple[str, ...]:
    """The index options of the line: PyTorch's index as the era installs it, but beside PyPI
    (--extra-index-url) once the line holds more than the torch packages, which PyTorch's index lacks."""
    flag, url = install_args(release, cuda, ())
    torch_only = all(r.split("==", 1)[0] in ("torch", *COMPANIONS) for r in stack.requirements)
    return (flag if torch_only else "--extra-index-url", url)


def pins_of(release: TorchRelease, cuda: str, packages: Sequence[str]) -> Dict[str, Tuple[Version, str]]:
    tag = variant_tag(cuda)
    return {
        name: (Version(f"{release.companion(name)}+{tag}"), f"the plan pins {name} {release.companion(name)}+{tag}")
        for name in packages
        if release.companion(name)
    }


def numpy_constraint(facts: Mapping[str, Any], release: TorchRelease, new_environment: bool) -> Tuple[Tuple[str, ...], Optional[Tuple[Version, str]], Tuple[str, ...]]:
    """(line constraints, the NumPy the resolver assumes or None, notes) for the release's NumPy."""
    if not torch_needs_numpy_1(release.torch):
        return (), None, ()
    installed = target(facts).installed_version("numpy")
    if installed is None and not new_environment:
        return (), None, ()
    why = f"torch {release.torch} was built against NumPy 1.x and breaks beside NumPy 2 (torch 2.3 is the first built against NumPy 2)"
    assumed = installed if installed is not None and installed.major < 2 else Version(LAST_NUMPY_1)
    return (NUMPY_1,), (assumed, f"{NUMPY_1} holds for torch {release.torch}"), (f"{NUMPY_1}: {why}",)


def satisfied(facts: Mapping[str, Any], requirements: Iterable[str]) -> bool:
    """Whether every requirement already holds for what is installed."""
    view = target(facts)
    for line in requirements:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            return False
        installed = view.installed_version(requirement.name)
        if installed is None or not requirement.specifier.contains(installed, prereleases=True):
            return False
    return True


def resolve_stack(
    facts: Mapping[str, Any],
    release: TorchRelease,
    cuda: str,
    packages: Sequence[str],
    python: Version,
    index: ReleaseIndex,
    skip: Iterable[str] = (),
    new_environment: bool = False,
    extra: Sequence[str] = (),
) -> Stack:
    """The pins of `packages`, NumPy's constraint, and every installed package they move, then `extra`
    requirements; a companion the release has no version of (torchaudio after 2.11) cannot be put back."""
    pins = pins_of(release, cuda, packages)
    unreleased = {n: f"no {n} was released for torch {release.torch}" for n in COMPANIONS if not release.companion(n)}
    constraints, numpy, notes = numpy_constraint(facts, release, new_environment)
    decided = dict(pins, **({"numpy": numpy} if numpy else {}))
    changes = resolve(facts, decided, python, index, skip, unreleased)
    lines = [f"{name}=={version}" for name, (version, _) in pins.items()] + list(constraints)
    lines += [c.requirement for c in changes if c.requirement] + list(extra)
    assumed = [c.name for c in changes if c.assumed]
    if assumed:
        notes += (f"versions assumed, not looked up: {', '.join(assumed)} (each kept in its installed major; the installer picks)",)
    return Stack(tuple(lines), changes, notes)
