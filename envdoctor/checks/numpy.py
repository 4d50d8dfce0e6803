"""NumPy ABI checks: extensions built against NumPy 1.x crash or fail to import under NumPy 2.

torch <= 2.2 was built against NumPy 1.x; 2.3 is the first built against NumPy 2 (pytorch#107302,
rgommers in pytorch#132179). NumPy 2 prints "A module that was compiled using NumPy 1.x cannot be run
in NumPy 2.x" and torch falls back to "Numpy is not available" (shared knowledge notes §8).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, List, Mapping

from packaging.version import Version

from envdoctor.checks import check
from envdoctor.checks.facts import distributions, installed_version, normalize
from envdoctor.checks.wheels import installer_command, marker_environment, requirements, torch_build
from envdoctor.knowledge import minor_of, torch_matrix
from envdoctor.model import Finding, Remedy, Severity

# Only a requirement with an upper bound or an exact pin can shut NumPy 2 out; the rest is not parsed.
NUMPY_REQUIREMENT = re.compile(r"^\s*numpy\b[^;]*(<|==|~=)", re.I)
NUMPY_2 = Version("2")
LAST_NUMPY_1 = "1.26.4"
FIRST_TORCH_FOR_NUMPY_2 = Version("2.3")


def needs_numpy_1(facts: Mapping[str, Any], numpy: Version) -> List[str]:
    """Installed distributions whose metadata accepts NumPy 1.x but not the installed NumPy 2."""
    environment = marker_environment(facts)
    found = []
    for name, dist in sorted(distributions(facts).items()):
        for requirement in requirements(dist, environment, NUMPY_REQUIREMENT):
            if normalize(requirement.name) != "numpy":
                continue
            spec = requirement.specifier
            if spec.contains(LAST_NUMPY_1, prereleases=True) and not spec.contains(numpy, prereleases=True):
                found.append(f"{dist['name']} {dist['version']} (numpy{spec})")
    return found


def old_torch(facts: Mapping[str, Any]) -> bool:
    version = installed_version(facts, "torch")
    return version is not None and Version(version.base_version) < FIRST_TORCH_FOR_NUMPY_2


def torch_upgrade(facts: Mapping[str, Any]) -> List[Remedy]:
    """torch 2.3 of the same CUDA variant, where that release has one."""
    build = torch_build(facts)
    release = torch_matrix.find(str(FIRST_TORCH_FOR_NUMPY_2))
    cuda = build.cuda if build and build.cuda else torch_matrix.CPU
    if release is None or (cuda != torch_matrix.CPU and minor_of(cuda) not in release.cuda):
        return []
    names = [n for n in ("torch", "torchvision", "torchaudio") if n in distributions(facts)]
    return [Remedy(f"or upgrade torch to {release.torch}, the first release built against NumPy 2:", installer_command(facts, "install", torch_matrix.install_args(release, cuda, names)))]


@check("numpy.abi-mismatch", "NumPy 2 installed beside packages built for NumPy 1.x", requires=("target",))
def abi_mismatch(facts: Mapping[str, Any]) -> Iterable[Finding]:
    numpy = installed_version(facts, "numpy")
    if numpy is None or numpy < NUMPY_2:
        return
    culprits = needs_numpy_1(facts, numpy)
    if old_torch(facts):
        culprits.insert(0, f"torch {installed_version(facts, 'torch')} (built against NumPy 1.x; 2.3 is the first built for NumPy 2)")
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
        evidence={"numpy": str(numpy), "needs_numpy_1": culprits},
        remedies=(
            Remedy("Install the last NumPy 1.x:", installer_command(facts, "install", ["numpy<2"])),
            *(torch_upgrade(facts) if old_torch(facts) else ()),
        ),
        references=("https://github.com/pytorch/pytorch/issues/107302", "https://numpy.org/devdocs/numpy_2_0_migration_guide.html"),
    )
