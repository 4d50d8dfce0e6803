"""Requirements consistency, judged as `pip check` judges it but for the diagnosed interpreter, over
the requirements in effect for it (facts/requirements.py, the graph the fix planners read too).

Python imports whatever is
installed: a package run against a version of a dependency it does not accept fails at import or,
for a compiled one, crashes (scipy 1.11 built for NumPy 1 under NumPy 2). torch's CUDA pins are left
to `wheels.torch-pins`, and requirements broken across NumPy's 1.x/2.x line to `numpy.abi-mismatch` and
`numpy.too-old`, which judge them with more care: one finding per cause.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from packaging.requirements import Requirement

from envdoctor.checks import check
from envdoctor.checks.numpy import major_conflict
from envdoctor.checks.wheels import pin_problems, requirement_text
from envdoctor.facts import view_of
from envdoctor.facts.requirements import requirements_in_effect
from envdoctor.facts.target import TargetView, normalize, parse_version
from envdoctor.model import Finding, Remedy, Severity

STACK = frozenset({"torch", "torchvision", "torchaudio", "triton", "numpy", "stable-baselines3", "sb3-contrib", "gymnasium"})
CORE = frozenset({"numpy", "torch"})
Unmet = Tuple[Requirement, Optional[str]]


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
    installed = view_of(facts, TargetView).distributions
    judged_elsewhere = [p.requirement for p in pin_problems(facts)]
    numpy = view_of(facts, TargetView).installed_version("numpy")
    unmet: Dict[str, List[Unmet]] = {}
    for requirer, requirements in sorted(requirements_in_effect(view_of(facts, TargetView)).items()):
        for requirement in requirements:
            dist = installed.get(normalize(requirement.name))
            if numpy is not None and major_conflict(requirement, numpy):
                continue
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
    accepted = Remedy(f"Install versions {name} accepts:", view_of(facts, TargetView).installer_command("install", [install_argument(r) for r, _ in unmet]))
    if all(version is None for _, version in unmet):
        return (accepted,)
    upgrade = Remedy(f"Or upgrade {name} to a release that accepts what is installed:", view_of(facts, TargetView).installer_command("install", ["--upgrade", name]))
    return accepted, upgrade


def unmet_finding(facts: Mapping[str, Any], requirer: str, unmet: List[Unmet]) -> Finding:
    dist = view_of(facts, TargetView).distributions[requirer]
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


# The whole ladder: the stack imported, trained and saved with these versions, so a mismatch inside it did not crash it here.
WHOLE_LADDER = ("import_numpy", "import_torch", "cpu_ops", "import_gymnasium", "import_sb3", "import_sb3_contrib", "maskable_ppo", "learn", "save_load")


@check(
    "requirements.unsatisfied", "Installed distributions whose requirements the installed versions do not satisfy (pip check, for the target)",
    requires=("target",), disproved_by=WHOLE_LADDER,
)
def unsatisfied(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for requirer, unmet in unmet_requirements(facts).items():
        yield unmet_finding(facts, requirer, unmet)
