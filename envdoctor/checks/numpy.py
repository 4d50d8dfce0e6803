"""NumPy ABI checks: extensions built against NumPy 1.x crash or fail to import under NumPy 2.

torch <= 2.2 was built against NumPy 1.x; 2.3 is the first built against NumPy 2 (pytorch#107302,
rgommers in pytorch#132179). NumPy 2 prints "A module that was compiled using NumPy 1.x cannot be run
in NumPy 2.x" and torch falls back to "Numpy is not available" (docs/knowledge/domain-facts.md §8).
Most other compiled packages built for NumPy 1.x say nothing of it in their metadata, so their installed
binaries are read (collect/numpy_builds.py: which NumPy core module their extensions import), and what
they say beats knowledge/numpy2.csv, which judges by version only what no binary told. The reverse, a
release that requires NumPy 2 beside NumPy 1.x, is its own finding, `numpy.too-old`: a warning, since
such a wheel was built against NumPy 2 and its project no longer supports NumPy 1.x rather than
being known to crash there.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from packaging.requirements import Requirement
from packaging.version import Version

from envdoctor.checks import check
from envdoctor.checks.imports import classify, error_line, failed_results
from envdoctor.checks.wheels import requirements
from envdoctor.facts import view_of
from envdoctor.facts.requirements import markers
from envdoctor.facts.target import TargetView, normalize, parse_version
from envdoctor.knowledge import minor_of, numpy2, torch_matrix
from envdoctor.knowledge.numpy2 import FIRST_TORCH_FOR_NUMPY_2, LAST_NUMPY_1, NumpyTwoRelease
from envdoctor.model import Finding, Remedy, Severity

NUMPY_REQUIREMENT_ANY = re.compile(r"^\s*numpy\b", re.I)
NUMPY_2 = Version("2")
NUMPY_2_RELEASES = ("2.0.2", "2.5.0", "3.0.0")  # any one accepted means the requirement wants a NumPy 2


def major_conflict(requirement: Requirement, numpy: Version) -> Optional[str]:
    """Whether a requirement on NumPy is broken across the 1.x/2.x line: "needs-1" when it accepts NumPy 1.x
    but not the installed NumPy 2, "needs-2" when it accepts a NumPy 2 but not the installed 1.x, else None.
    These are the numpy checks' to report (one finding for the cause), not requirements.unsatisfied's."""
    if normalize(requirement.name) != "numpy":
        return None
    spec = requirement.specifier
    if spec.contains(numpy, prereleases=True):
        return None
    if numpy >= NUMPY_2:
        return "needs-1" if spec.contains(LAST_NUMPY_1, prereleases=True) else None
    return "needs-2" if any(spec.contains(v, prereleases=True) for v in NUMPY_2_RELEASES) else None


def metadata_conflicts(facts: Mapping[str, Any], numpy: Version, kind: str) -> Dict[str, List[str]]:
    """Installed distributions whose own Requires-Dist on NumPy is broken by the installed one in the way
    `kind` names (major_conflict), with those requirements."""
    judged = markers(view_of(facts, TargetView).marker_environment())
    found: Dict[str, List[str]] = {}
    for name, dist in sorted(view_of(facts, TargetView).distributions.items()):
        for requirement in requirements(dist, judged, NUMPY_REQUIREMENT_ANY):
            if major_conflict(requirement, numpy) == kind:
                found.setdefault(name, []).append(f"numpy{requirement.specifier}")
    return found


def installed_releases(facts: Mapping[str, Any]) -> Iterator[Tuple[str, Version, NumpyTwoRelease]]:
    """(normalized name, installed version, table row) of each installed distribution numpy2.csv knows."""
    known = numpy2.table()
    for name, dist in sorted(view_of(facts, TargetView).distributions.items()):
        version = parse_version(dist["version"])
        if name in known and version is not None:
            yield name, version, known[name]


def built_for_numpy_1(facts: Mapping[str, Any]) -> Dict[str, NumpyTwoRelease]:
    """Installed distributions older than their project's first release built for NumPy 2, unless their
    own binaries say they were built against NumPy 2 (collect/numpy_builds.py): the artifact beats the table."""
    builds = view_of(facts, TargetView).numpy_builds
    return {
        name: release for name, version, release in installed_releases(facts)
        if release.built_for_numpy_1(version) and (builds.get(name) or {}).get("numpy") != "2"
    }


def imports_failing_on_numpy_abi(facts: Mapping[str, Any]) -> Dict[str, str]:
    """Distributions whose modules `check --imports` saw fail with NumPy's ABI message, with what it said:
    the cause observed, not inferred; imports.failed leaves these to this check under NumPy 2."""
    found: Dict[str, str] = {}
    for result in failed_results(facts):
        if classify(result).kind == "numpy-abi" and result.get("distribution"):
            found.setdefault(normalize(str(result["distribution"])), f"{result.get('module')} fails to import: {error_line(result)}")
    return found


def binaries_built_for_numpy_1(facts: Mapping[str, Any]) -> Dict[str, str]:
    """Installed distributions whose extensions name only NumPy 1.x's core module, with the one that told."""
    return {name: str(build.get("extension")) for name, build in view_of(facts, TargetView).numpy_builds.items() if build.get("numpy") == "1"}


def culprit_line(dist: Mapping[str, Any], reasons: List[str]) -> str:
    return f"{dist['name']} {dist['version']} ({'; '.join(reasons)})"


def needs_numpy_1(facts: Mapping[str, Any], too_old: Mapping[str, NumpyTwoRelease], by_metadata: Mapping[str, List[str]]) -> List[str]:
    """One line per distribution that cannot run under `numpy`: by its metadata, its binaries, numpy2.csv, or several."""
    dists = view_of(facts, TargetView).distributions
    by_binary, observed = binaries_built_for_numpy_1(facts), imports_failing_on_numpy_abi(facts)
    lines = []
    for name in sorted((set(by_metadata) | set(too_old) | set(by_binary) | set(observed)) & set(dists)):
        reasons = [observed[name]] if name in observed else []
        reasons += by_metadata.get(name, ())
        if name in by_binary:
            reasons.append(f"built against NumPy 1.x: {by_binary[name]} imports numpy.core._multiarray_umath")
        if name in too_old:
            reasons.append(f"first built for NumPy 2: {too_old[name].first_built}")
        lines.append(culprit_line(dists[name], reasons))
    return lines


def numpy_2_builds_upgrade(facts: Mapping[str, Any], too_old: Mapping[str, NumpyTwoRelease], others: Iterable[str]) -> List[Remedy]:
    """Each package built for NumPy 1.x moved to its first release built for NumPy 2 (numpy2.csv), and each
    other one (its metadata refuses NumPy 2, its binaries were built against 1.x) to a newer release than
    the installed one, in one install."""
    others = sorted(set(others) - set(too_old))
    if not too_old and not others:
        return []
    dists = view_of(facts, TargetView).distributions
    args = sorted(
        [f"{release.project}>={release.first_built}" for _, release in too_old.items()]
        + [f"{dists[name]['name']}>{dists[name]['version']}" for name in others if name in dists],
        key=str.lower,
    )
    return [Remedy("or upgrade the packages built for NumPy 1.x to releases built for NumPy 2:", view_of(facts, TargetView).installer_command("install", args))]


def old_torch(facts: Mapping[str, Any]) -> bool:
    version = view_of(facts, TargetView).installed_version("torch")
    return version is not None and Version(version.base_version) < FIRST_TORCH_FOR_NUMPY_2


def torch_upgrade(facts: Mapping[str, Any]) -> List[Remedy]:
    """torch 2.3 of the same CUDA variant, where that release has one."""
    build = view_of(facts, TargetView).torch_build
    release = torch_matrix.find(str(FIRST_TORCH_FOR_NUMPY_2))
    cuda = build.cuda if build and build.cuda else torch_matrix.CPU
    if release is None or (cuda != torch_matrix.CPU and minor_of(cuda) not in release.cuda):
        return []
    names = [n for n in ("torch", "torchvision", "torchaudio") if n in view_of(facts, TargetView).distributions]
    return [Remedy(f"or upgrade torch to {release.torch}, the first release built against NumPy 2:", view_of(facts, TargetView).installer_command("install", torch_matrix.install_args(release, cuda, names)))]


@check("numpy.abi-mismatch", "NumPy 2 installed beside packages built for NumPy 1.x", requires=("target",))
def abi_mismatch(facts: Mapping[str, Any]) -> Iterable[Finding]:
    numpy = view_of(facts, TargetView).installed_version("numpy")
    if numpy is None or numpy < NUMPY_2:
        return
    too_old, by_metadata = built_for_numpy_1(facts), metadata_conflicts(facts, numpy, "needs-1")
    culprits = needs_numpy_1(facts, too_old, by_metadata)
    if old_torch(facts):
        culprits.insert(0, f"torch {view_of(facts, TargetView).installed_version('torch')} (built against NumPy 1.x; 2.3 is the first built for NumPy 2)")
    if not culprits:
        return
    yield Finding(
        id="numpy.abi-mismatch",
        severity=Severity.ERROR,
        title=f"NumPy {numpy} is installed, but {len(culprits)} package(s) were built for NumPy 1.x",
        explanation=(
            "Extensions compiled against NumPy 1.x crash or fail to import under NumPy 2 (\"A module that was compiled "
            "using NumPy 1.x cannot be run in NumPy 2.x\", \"_ARRAY_API not found\"; torch then reports \"Numpy is not "
            "available\"). Needing NumPy 1.x: " + "; ".join(culprits) + "."
        ),
        evidence={"numpy": str(numpy), "needs_numpy_1": culprits, "first_built_for_numpy_2": {r.project: str(r.first_built) for r in too_old.values()}},
        remedies=(
            Remedy("Install the last NumPy 1.x:", view_of(facts, TargetView).installer_command("install", ["numpy<2"])),
            *numpy_2_builds_upgrade(facts, too_old, set(by_metadata) | set(binaries_built_for_numpy_1(facts)) | set(imports_failing_on_numpy_abi(facts))),
            *(torch_upgrade(facts) if old_torch(facts) else ()),
        ),
        references=(
            "https://github.com/pytorch/pytorch/issues/107302",
            "https://numpy.org/devdocs/numpy_2_0_migration_guide.html",
            "https://github.com/numpy/numpy/issues/26191",
        ),
    )


def requiring_numpy_2(facts: Mapping[str, Any]) -> Dict[str, NumpyTwoRelease]:
    """Installed distributions at or past their project's first release that requires NumPy 2, on this Python."""
    python = parse_version(view_of(facts, TargetView).marker_environment()["python_version"])
    if python is None:
        return {}
    return {name: release for name, version, release in installed_releases(facts) if release.requires_numpy_2(version, python)}


@check("numpy.too-old", "NumPy 1.x installed beside packages that require NumPy 2", requires=("target",))
def too_old_numpy(facts: Mapping[str, Any]) -> Iterable[Finding]:
    numpy = view_of(facts, TargetView).installed_version("numpy")
    if numpy is None or numpy >= NUMPY_2:
        return
    needing = requiring_numpy_2(facts)
    by_metadata = metadata_conflicts(facts, numpy, "needs-2")
    if not needing and not by_metadata:
        return
    dists = view_of(facts, TargetView).distributions
    lines = [
        culprit_line(dists[name], by_metadata.get(name, []) + ([f"requires NumPy 2 since {needing[name].first_requiring}"] if name in needing else []))
        for name in sorted(set(needing) | set(by_metadata))
    ]
    last_accepting = [f"{release.project}<{release.first_requiring}" for _, release in sorted(needing.items())]
    yield Finding(
        id="numpy.too-old",
        severity=Severity.WARNING,
        title=f"NumPy {numpy} is installed, but {len(lines)} package(s) require NumPy 2",
        explanation=(
            "These releases were built for NumPy 2 and their projects dropped NumPy 1.x: under NumPy 1.x they are "
            "unsupported and may fail at import or give wrong results. Requiring NumPy 2 (their own metadata, or "
            "knowledge/numpy2.csv): " + "; ".join(lines) + "."
        ),
        evidence={"numpy": str(numpy), "requires_numpy_2": lines},
        remedies=(
            *(() if old_torch(facts) else (Remedy("Install NumPy 2:", view_of(facts, TargetView).installer_command("install", ["numpy>=2"])),)),
            *((Remedy("or keep NumPy 1.x with the last releases that accept it:", view_of(facts, TargetView).installer_command("install", last_accepting)),) if last_accepting else ()),
        ),
        references=("https://github.com/numpy/numpy/issues/26191",),
    )
