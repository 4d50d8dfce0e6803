"""NVIDIA wheel checks, and torch's own CUDA pins the other checks share (torch's build, the CUDA
families of the installed nvidia-* wheels and the exact pip commands come from facts/target.py).

Families and pins: knowledge/wheels.py (nvidia_wheels.csv) and torch's Requires-Dist
(docs/knowledge/domain-facts.md §3). cu11 and cu12 wheels unpack into the same nvidia/<lib>/lib folders, and
an extension of the other family loads its libraries into the same process (pytorch#91067, #104808).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any, Iterable, List, Mapping, Optional, Tuple

from packaging.requirements import Requirement
from packaging.version import Version

from envdoctor.checks import check
from envdoctor.facts import view_of
from envdoctor.facts.conda import CondaView
from envdoctor.facts.probe import probe_of
from envdoctor.facts.requirements import Markers, markers, parsed_lines, requires_lines
from envdoctor.facts.target import TargetView, normalize, parse_version
from envdoctor.knowledge import wheels
from envdoctor.model import Finding, Remedy, Severity
from envdoctor.probe.result import StageStatus

CUDA_REQUIREMENT = re.compile(r"^\s*(nvidia[-_.]|cuda[-_.]toolkit|cuda[-_.]bindings)", re.I)
LOWER_BOUND_OPERATORS = ("==", "===", ">=", ">", "~=")


def cpu_torch_probed_fine(facts: Mapping[str, Any]) -> Optional[str]:
    """Why CUDA wheels are inert here, or None: torch is a CPU-only build and the probe passed with them installed."""
    build = view_of(facts, TargetView).torch_build
    probe = None if build is None or build.cuda or build.hip else probe_of(facts)
    if probe is None:
        return None
    torch = probe.stage("import_torch")
    if probe.failures or torch is None or torch.status is not StageStatus.PASSED:
        return None
    passed = sum(stage.status is StageStatus.PASSED for stage in probe.stages)
    return f"torch {build.build_version} is a CPU-only build and the probe passed ({passed} stages) with these wheels installed"


def pinned(dist: Mapping[str, Any]) -> str:
    return f"{dist['name']}=={dist['version']}"


def requirements(dist: Mapping[str, Any], judged: Markers, wanted: "re.Pattern[str]", extras: Iterable[str] = ()) -> List[Requirement]:
    """The distribution's requirements that match `wanted` and apply here (for `extras` when given)."""
    parsed = parsed_lines(line for line in requires_lines(dist) if wanted.match(line))
    return [requirement for requirement in parsed if judged.applies(requirement, extras)]


def below_requirement(requirement: Requirement, installed: Version) -> bool:
    """True when `installed` is below what the requirement asks for (the case that breaks loading)."""
    return any(
        spec.operator in LOWER_BOUND_OPERATORS and installed < Version(spec.version.rstrip(".*"))
        for spec in requirement.specifier
    )


@dataclass(frozen=True)
class PinProblem:
    """One of torch's CUDA pins that the installed wheel does not meet."""

    requirement: Requirement
    installed: Optional[str]

    @property
    def severity(self) -> Severity:
        """Missing or older than pinned breaks loading (error); newer than pinned usually works (warning)."""
        if self.installed is None:
            return Severity.ERROR
        version = parse_version(self.installed)
        return Severity.ERROR if version is None or below_requirement(self.requirement, version) else Severity.WARNING

    def describe(self) -> str:
        return f"{self.requirement.name}{self.requirement.specifier}: " + (self.installed or "missing")


def torch_cuda_pins(facts: Mapping[str, Any]) -> List[Requirement]:
    """torch's CUDA requirements, with cuda-toolkit's extras expanded through its installed metadata."""
    installed = view_of(facts, TargetView).distributions
    judged = markers(view_of(facts, TargetView).marker_environment())
    torch = installed.get("torch")
    if torch is None:
        return []
    pins = requirements(torch, judged, CUDA_REQUIREMENT)
    expanded = list(pins)
    for pin in pins:
        meta = installed.get(normalize(pin.name))
        if pin.extras and meta is not None:
            expanded.extend(requirements(meta, judged, CUDA_REQUIREMENT, pin.extras))
    return expanded


def pin_problems(facts: Mapping[str, Any]) -> List[PinProblem]:
    installed = view_of(facts, TargetView).distributions
    problems = []
    for requirement in torch_cuda_pins(facts):
        dist = installed.get(normalize(requirement.name))
        version = dist["version"] if dist else None
        if version is None or not requirement.specifier.contains(version, prereleases=True):
            problems.append(PinProblem(requirement, version))
    return problems


def requirement_text(requirement: Requirement) -> str:
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    return f"{requirement.name}{extras}{requirement.specifier}"


def family_summary(grouped: Mapping[str, List[dict]]) -> str:
    return "; ".join(f"{family}: {', '.join(pinned(d) for d in dists)}" for family, dists in grouped.items())


def planned_fix(facts: Mapping[str, Any]) -> Remedy:
    """`envdoctor fix --mixed-wheels` also reads which installed packages need which family, and with
    --apply records the environment first, verifies the result and rolls back on failure."""
    return Remedy(
        "Or let envdoctor plan the removal (it keeps any family another installed package requires); add --apply to carry it out, recorded and reversible:",
        f"envdoctor fix --mixed-wheels --python {shlex.quote(view_of(facts, TargetView).executable)}",
    )


def mixed_family_remedies(facts, grouped, needed: Optional[str]) -> Tuple[Remedy, ...]:
    if needed in grouped:
        strays = [d["name"] for family, dists in grouped.items() if family != needed for d in dists]
        return (
            Remedy(f"Uninstall the wheels of the families torch does not use (it needs {needed}):", view_of(facts, TargetView).installer_command("uninstall", strays)),
            Remedy("Then check again; a package that needs the other family (TensorFlow, onnxruntime-gpu, bitsandbytes) belongs in its own virtual environment."),
            planned_fix(facts),
        )
    return tuple(
        Remedy(f"To keep only {keep}, uninstall the others:", view_of(facts, TargetView).installer_command("uninstall", [d["name"] for f, ds in grouped.items() if f != keep for d in ds]))
        for keep in grouped
    ) + (planned_fix(facts),)


def conda_mixes_cuda(facts: Mapping[str, Any]) -> bool:
    """Whether conda's own CUDA packages take part in the mixing: then conda.mixed-cuda reports the one
    cause, pip's wheels listed inside it, with conda's commands."""
    conda = view_of(facts, CondaView)
    conda_side = conda.conda_cuda_majors()
    return bool(conda_side) and len(set(conda_side) | set(conda.pip_cuda_majors())) > 1


@check("wheels.mixed-cuda-families", "NVIDIA CUDA wheels of more than one CUDA family in one environment", requires=("target",))
def mixed_cuda_families(facts: Mapping[str, Any]) -> Iterable[Finding]:
    grouped = view_of(facts, TargetView).families
    if len(grouped) < 2 or conda_mixes_cuda(facts):
        return
    build = view_of(facts, TargetView).torch_build
    needed = wheels.torch_family(build.cuda) if build else None
    reason = f"torch {build.build_version} needs {needed}" if needed else "No CUDA build of torch is installed to say which one is needed"
    unused = cpu_torch_probed_fine(facts)
    yield Finding(
        id="wheels.mixed-cuda-families",
        severity=Severity.WARNING,
        title=f"NVIDIA wheels of {len(grouped)} CUDA families are installed together ({', '.join(grouped)})",
        explanation=(
            f"{family_summary(grouped)}. {reason}. The families' libraries have different sonames, so torch loads only "
            "its own; the danger is an extension built for the other family (TensorFlow, onnxruntime-gpu, bitsandbytes) "
            "loading its CUDA libraries into the same process, where mismatched cuBLAS/cuDNN sub-libraries end in "
            "undefined symbols or segfaults, and an uninstall of one family removing files the other shares."
            + (f" The probe disproved a crash of torch here: {unused}." if unused else "")
        ),
        evidence={"families": {f: [pinned(d) for d in ds] for f, ds in grouped.items()}, "torch_needs": needed, "disproved_by_probe": unused},
        remedies=mixed_family_remedies(facts, grouped, needed),
        references=("https://github.com/pytorch/pytorch/issues/91067", "https://github.com/pytorch/pytorch/issues/104808"),
    )


@check(
    "wheels.torch-pins", "Installed NVIDIA wheels differ from the versions torch pins",
    requires=("target",), disproved_by=("import_torch", "cuda_init", "cuda_matmul"),
)
def torch_pins(facts: Mapping[str, Any]) -> Iterable[Finding]:
    problems = pin_problems(facts)
    if not problems:
        return
    severity = max((p.severity for p in problems), key=lambda s: s.rank)
    missing = [p for p in problems if p.installed is None]
    build = view_of(facts, TargetView).torch_build
    yield Finding(
        id="wheels.torch-pins",
        severity=severity,
        title=(
            f"torch {build.build_version if build else ''} pins {len(problems)} NVIDIA wheel(s) that are "
            + ("missing or older than pinned" if severity is Severity.ERROR else "installed at other versions")
        ),
        explanation=(
            "torch is built against exact CUDA library versions and loads them from these wheels. "
            + (f"Missing: {', '.join(p.requirement.name for p in missing)}, so loading torch's CUDA libraries fails. " if missing else "")
            + "An older cuDNN or cuBLAS than torch was built with fails its version check or crashes; a newer one usually works."
        ),
        evidence={"mismatches": [p.describe() for p in problems]},
        remedies=(Remedy("Install the versions torch pins:", view_of(facts, TargetView).installer_command("install", [requirement_text(p.requirement) for p in problems])),),
        references=("https://github.com/pytorch/pytorch/issues/104808",),
    )
