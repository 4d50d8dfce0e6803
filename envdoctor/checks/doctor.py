"""Checks about the diagnosis itself: a collector that failed must be visible, not a silent gap, and a
knowledge table that disagrees with the installed torch, or does not know it, is said so."""

from __future__ import annotations

import shlex
from typing import Any, Iterable, Mapping, Optional

from envdoctor.checks import check
from envdoctor.checks.cuda import (
    ARTIFACT_SOURCE, KERNEL_SOURCES, RECORDED_SOURCE, artifact_kernels, cuda_build, pinned_cuda_runtime, recorded_kernels, table_kernels, true_kernels,
)
from envdoctor.facts import view_of
from envdoctor.facts.gpu import GpuView
from envdoctor.facts.target import TargetView, TorchBuild, normalize
from envdoctor.knowledge import arches, minor_of, torch_matrix
from envdoctor.model import Finding, Remedy, Severity


@check("doctor.collector-failed", "A collector could not gather its facts, so the checks that need them were skipped")
def collector_failed(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for name, section in facts.items():
        if isinstance(section, Mapping) and "error" in section:
            yield Finding(
                id="doctor.collector-failed",
                severity=Severity.WARNING,
                title=f"The {name} facts could not be gathered; the checks that need them were skipped",
                explanation=str(section["error"]),
                evidence={"collector": name},
                remedies=(
                    Remedy("See which checks were skipped:", "envdoctor check -v"),
                    Remedy("If the cause is not on this machine's side, please report it to envdoctor's issue tracker with the JSON report attached."),
                ),
            )


ML_STACK = ("torch", "numpy", "stable-baselines3", "sb3-contrib", "gymnasium", "gym", "jax", "tensorflow")


@check("doctor.no-ml-stack", "The diagnosed interpreter holds no ML stack: probably not the one you train with", requires=("target",))
def no_ml_stack(facts: Mapping[str, Any]) -> Iterable[Finding]:
    installed = view_of(facts, TargetView).distributions
    if any(normalize(name) in installed for name in ML_STACK):
        return
    python = view_of(facts, TargetView).executable
    yield Finding(
        id="doctor.no-ml-stack",
        severity=Severity.WARNING,
        title=f"{python} has none of torch, NumPy, SB3 or Gymnasium installed: envdoctor probably diagnosed the wrong interpreter",
        explanation=(
            "envdoctor diagnoses the Python it runs under unless --python names another. When it is installed in its own "
            "venv, with pipx or in the system Python, that interpreter is not the training environment, and every "
            "verdict below is about the wrong place."
        ),
        evidence={"python": python, "distributions": len(installed)},
        remedies=(
            Remedy("Name the interpreter you train with (a venv folder works too):", "envdoctor check --python /path/to/venv/bin/python"),
            Remedy("In a conda env:", "envdoctor check --python \"$(conda run -n ENV python -c 'import sys; print(sys.executable)')\""),
        ),
    )


def arch_row_name(row: arches.ArchList) -> str:
    return f"arches.csv {row.variant} ({row.platform}) for torch {row.torch_from}–{row.torch_to}"


def stale_arch_row(build: TorchBuild, row: arches.ArchList, recorded: arches.ArchList) -> Finding:
    return Finding(
        id="doctor.knowledge-stale",
        severity=Severity.INFO,
        title=f"The knowledge table row {arch_row_name(row)} says {row.describe()}; torch {build.build_version} itself ships {recorded.describe()}",
        explanation=(
            f"The kernels of the installed torch, {KERNEL_SOURCES[recorded.source]}, are {recorded.describe()}; the table says "
            f"{row.describe()} ({row.source}). The GPU verdicts of this report use the installed torch's own; the table row "
            "is out of date or describes another build of the same version."
        ),
        evidence={
            "torch": build.build_version, "variant": row.variant, "row": arch_row_name(row), "table": list(row.flags()),
            "recorded": list(recorded.flags()), "source": recorded.source,
        },
        remedies=(Remedy("Please report it to envdoctor's issue tracker with the JSON report attached, so the table can be corrected."),),
    )


ARCH_SUPPORT = {RECORDED_SOURCE: "recorded by the probe", ARTIFACT_SOURCE: "read from its libraries"}


def unknown_to_tables(facts: Mapping[str, Any], build: TorchBuild, recorded: Optional[arches.ArchList]) -> Finding:
    """A torch (or CUDA variant of it) the tables have no row for: say what its own files tell, and that
    without the probe its GPU support is unknown rather than fine."""
    tag = torch_matrix.variant_tag(build.cuda)
    pinned = pinned_cuda_runtime(facts)
    runtime = f"CUDA {build.cuda} from torch/version.py" + (f", the NVIDIA runtime wheel its metadata pins is CUDA {pinned}" if pinned else "")
    present = [g for g in view_of(facts, GpuView).gpus if g.get("compute_capability")]
    if recorded is not None:
        kernels = f"Its GPU kernels, {KERNEL_SOURCES[recorded.source]}, are {recorded.describe()}."
    elif present:
        kernels = (
            "Whether " + ", ".join(f"GPU {g.get('index')} ({g.get('name')}, sm_{g['compute_capability'].replace('.', '')})" for g in present)
            + " has kernels in it is unknown: no probe recorded torch.cuda.get_arch_list(), its libraries' fatbins were not read, and no arch list is guessed."
        )
    else:
        kernels = ""
    return Finding(
        id="doctor.knowledge-stale",
        severity=Severity.INFO,
        title=f"envdoctor's tables do not know torch {build.build_version} ({tag}); it is judged from its own files",
        explanation=f"torch_matrix.csv and arches.csv have no row for torch {minor_of(build.version)} with {tag}. The driver verdict uses {runtime}. {kernels}".strip(),
        evidence={
            "torch": build.build_version, "variant": tag, "version_py_cuda": build.cuda, "pinned_cuda_runtime": pinned,
            "arch_support": ARCH_SUPPORT.get(recorded.source) if recorded is not None else "unknown",
        },
        remedies=(() if recorded is not None or not present else (
            Remedy("Let torch report its own kernels: run the check with the probe (it is on unless --no-probe):",
                   f"envdoctor check --python {shlex.quote(view_of(facts, TargetView).executable)}"),
        )),
    )


def tables_know(facts: Mapping[str, Any], build: TorchBuild) -> bool:
    release = torch_matrix.find(build.version)
    return release is not None and minor_of(build.cuda) in release.cuda and table_kernels(facts, build) is not None


def reader_disagrees(build: TorchBuild, probed: arches.ArchList, read: arches.ArchList) -> Finding:
    """torch's own get_arch_list() and what the fatbin reader read from its libraries differ: the reader,
    not the table, is wrong, and the verdicts use what torch reported."""
    return Finding(
        id="doctor.knowledge-stale",
        severity=Severity.INFO,
        title=f"torch {build.build_version} reported {probed.describe()}; envdoctor read {read.describe()} from its libraries",
        explanation="The GPU verdicts use what torch itself reported to the probe; envdoctor's reading of the fatbins of torch's CUDA libraries disagrees with it.",
        evidence={"torch": build.build_version, "recorded": list(probed.flags()), "read_from_libraries": list(read.flags())},
        remedies=(Remedy("Please report it to envdoctor's issue tracker with the JSON report attached, so the reader can be corrected."),),
    )


@check("doctor.knowledge-stale", "The knowledge tables disagree with what the installed torch says, or do not know it", requires=("target",))
def knowledge_stale(facts: Mapping[str, Any]) -> Iterable[Finding]:
    build = cuda_build(facts)
    if build is None:
        return
    probed, read = recorded_kernels(facts, build), artifact_kernels(facts, build)
    if probed is not None and read is not None and probed.kernels != read.kernels:
        yield reader_disagrees(build, probed, read)
    recorded, row = true_kernels(facts, build), table_kernels(facts, build)
    if recorded is not None and row is not None and recorded.kernels != row.kernels:
        yield stale_arch_row(build, row, recorded)
    if not tables_know(facts, build):
        yield unknown_to_tables(facts, build, recorded)
