"""The way out when no torch build for the asked CUDA supports the target's Python: a new environment.

The current environment is left alone. The plan builds a venv from an interpreter found on this
machine (PATH or pyenv), or a conda environment when none fits, installs the pinned torch there, then
the rest of the current environment's top-level packages (the leaves of its dependency graph) in the
same resolver run as the torch pins, so pip can only pick versions that work with that torch.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any, Mapping, Optional, Sequence, Tuple

from envdoctor.fix.hardware import kernels_for_every_gpu
from envdoctor.fix.plan import Expectation, Plan, Step, StepKind, StepStatus
from envdoctor.fix.requires import leaves, target
from envdoctor.fix.verify import import_torch_argv
from envdoctor.knowledge import version_tuple
from envdoctor.knowledge.torch_matrix import TorchRelease, index_url, install_args, releases, variant_tag


def python_for(release: TorchRelease, pythons: Sequence[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The newest interpreter found on this machine whose minor the release has wheels for."""
    fitting = [p for p in pythons if p.get("minor") in release.python]
    return max(fitting, key=lambda p: version_tuple(p["minor"]), default=None)


def choose(facts: Mapping[str, Any], cuda: str, named: Optional[TorchRelease]) -> Tuple[TorchRelease, Optional[Mapping[str, Any]]]:
    """The newest release (or the named one) with kernels for every GPU here that an interpreter found
    here can run, with that interpreter; else the newest such release and None (a conda environment
    brings its own Python)."""
    listed = [named] if named else [r for r in releases() if cuda in r.cuda]
    candidates = [r for r in listed if kernels_for_every_gpu(facts, r, cuda)] or listed
    pythons = facts.get("pythons", {}).get("interpreters", ())
    for release in reversed(candidates):
        python = python_for(release, pythons)
        if python:
            return release, python
    return candidates[-1], None


def folder_for(facts: Mapping[str, Any], cuda: str) -> str:
    python = target(facts).python
    prefix = python.get("prefix")
    if python.get("is_venv") and prefix:
        return f"{prefix}-{variant_tag(cuda)}"
    return f".venv-{variant_tag(cuda)}"


def venv_route(facts: Mapping[str, Any], release: TorchRelease, cuda: str, python: Mapping[str, Any]) -> Tuple[Step, Tuple[str, ...], str]:
    """Create a venv from `python`: the step, the install command prefix, and the new interpreter."""
    folder = folder_for(facts, cuda)
    new_python = str(PurePath(folder) / "bin" / "python")
    create = Step(
        StepKind.CREATE_ENV,
        f"Create a virtual environment with Python {python['minor']} at {folder}",
        f"torch {release.torch} has {variant_tag(cuda)} wheels for Python {minors(release)}; Python {python['minor']} found at {python['path']}",
        argv=(python["path"], "-m", "venv", folder),
    )
    return create, (new_python, "-m", "pip", "install"), new_python


def conda_route(facts: Mapping[str, Any], release: TorchRelease, cuda: str) -> Tuple[Step, Tuple[str, ...], str]:
    """Create a conda environment: the step, the install command prefix, and how to run its Python."""
    found = facts.get("pythons", {}).get("conda")
    conda, name, minor = found or "conda", f"torch-{variant_tag(cuda)}", release.python[-1]
    missing = "" if found else f"; conda was not found either: install Miniconda first (or a Python {minor}, e.g. `pyenv install {minor}`)"
    create = Step(
        StepKind.CREATE_ENV,
        f"Create a conda environment {name} with Python {minor}",
        f"torch {release.torch} has wheels for Python {minors(release)} and no such interpreter was found here{missing}",
        argv=(conda, "create", "-y", "-n", name, f"python={minor}"),
    )
    run = (conda, "run", "-n", name, "python")
    return create, run + ("-m", "pip", "install"), run


def minors(release: TorchRelease) -> str:
    return f"{release.python[0]}–{release.python[-1]}"


def plan_new_environment(
    facts: Mapping[str, Any],
    release: TorchRelease,
    python: Optional[Mapping[str, Any]],
    cuda: str,
    packages: Sequence[str],
    refusal: str,
    notes: Tuple[str, ...] = (),
) -> Plan:
    """A plan that builds a separate environment for `release`, from `python` (None: with conda)."""
    if python:
        create, installer, new_python = venv_route(facts, release, cuda, python)
        verify_argv = import_torch_argv(new_python)
    else:
        create, installer, run = conda_route(facts, release, cuda)
        verify_argv = import_torch_argv(*run)
    pins = [a for a in install_args(release, cuda, packages) if "==" in a]
    others = leaves(facts)
    steps = (
        create,
        Step(StepKind.INSTALL, f"Install {' '.join(pins)} there", "the torch stack pinned to this CUDA build", argv=installer + tuple(install_args(release, cuda, packages))),
        Step(
            StepKind.INSTALL,
            f"Install the rest of this environment's top-level packages: {', '.join(others) or 'none'}",
            "together with the torch pins, so pip picks versions that work with them" if others else "nothing else is installed at top level",
            StepStatus.PLANNED if others else StepStatus.SKIPPED,
            installer + (*pins, *others, "--extra-index-url", index_url(cuda)) if others else (),
        ),
        Step(StepKind.VERIFY, "Check that torch imports in the new environment", "a fresh interpreter loads the new stack", argv=verify_argv),
    )
    return Plan(
        action="pin-cuda",
        title=f"Pin torch to CUDA {cuda} in a new environment (torch {release.torch}+{variant_tag(cuda)})",
        python=target(facts).python.get("executable", ""),
        installer="pip",
        steps=steps,
        refusal=refusal,
        alternative=True,
        notes=notes + ("This environment is left unchanged; activate the new one to use it.",),
        expect=Expectation(torch_version=f"{release.torch}+{variant_tag(cuda)}", torch_imports=True),
    )
