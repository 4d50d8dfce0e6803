"""The way out when no torch build for the asked CUDA supports the target's Python: a new environment.

The current environment is left alone. The plan builds a venv from an interpreter found on this
machine (PATH or pyenv), or a conda environment when none fits, installs the resolved torch stack
there (fix/stack.py: the pins, NumPy below 2 for a torch built against NumPy 1, the packages put back),
then the rest of the user's top-level packages, each held to its installed major, in the same installer
run as the stack, so the installer can only pick versions that work with that torch. envdoctor and its
own dependencies are not the user's packages; packages tied to another CUDA family are not carried
(fix/cuda_tied.py) and are listed with their counterpart.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple

from packaging.version import Version

from envdoctor.fix.hardware import kernels_for_every_gpu
from envdoctor.fix.plan import Expectation, Plan, Step, StepKind, StepStatus
from envdoctor.fix.cuda_tied import tied_packages
from envdoctor.fix.releases import OFFLINE, ReleaseIndex
from envdoctor.fix.requires import families_installed, leaves, target
from envdoctor.fix.resolve import major_range
from envdoctor.fix.stack import Stack, index_flags, resolve_stack
from envdoctor.fix.verify import import_torch_argv, ladder_argv
from envdoctor.knowledge import version_tuple
from envdoctor.facts.target import normalize
from envdoctor.knowledge.torch_matrix import TorchRelease, index_url, releases, variant_tag
from envdoctor.knowledge.wheels import torch_family


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


def carried(facts: Mapping[str, Any], stack: Stack, skip: Iterable[str]) -> Tuple[str, ...]:
    """The user's top-level packages for the new environment, each held to its installed major
    (a put-back or a lost one is the stack's to say)."""
    decided = {normalize(c.name) for c in stack.changes} | {normalize(n) for n in skip}
    view, found = target(facts), []
    for name in leaves(facts):
        version = view.installed_version(name)
        if normalize(name) in decided:
            continue
        found.append(f"{name}{major_range(version)}" if version is not None else name)
    return tuple(found)


def plan_new_environment(
    facts: Mapping[str, Any],
    release: TorchRelease,
    python: Optional[Mapping[str, Any]],
    cuda: str,
    packages: Sequence[str],
    refusal: str,
    notes: Tuple[str, ...] = (),
    index: ReleaseIndex = OFFLINE,
) -> Plan:
    """A plan that builds a separate environment for `release`, from `python` (None: with conda)."""
    new_python = None
    if python:
        create, installer, new_python = venv_route(facts, release, cuda, python)
        verify_argv = import_torch_argv(new_python)
    else:
        create, installer, run = conda_route(facts, release, cuda)
        verify_argv = import_torch_argv(*run)
    family = torch_family(cuda)
    tied = tied_packages(facts, family, index)
    skip = (*tied, *(n for names in families_installed(facts).values() for n in names))
    minor = python["minor"] if python else release.python[-1]
    stack = resolve_stack(facts, release, cuda, packages, Version(minor), index, skip=skip, new_environment=True)
    flags = index_flags(release, cuda, stack)
    others = carried(facts, stack, skip)
    steps = (
        create,
        Step(StepKind.INSTALL, f"Install {' '.join(stack.requirements)} there", "the torch stack pinned to this CUDA build, with what it implies", argv=installer + stack.requirements + flags),
        Step(
            StepKind.INSTALL,
            f"Install the rest of this environment's top-level packages: {', '.join(others) or 'none'}",
            "together with the torch stack, so the installer picks versions that work with it, each in the user's major" if others else "nothing else is installed at top level",
            StepStatus.PLANNED if others else StepStatus.SKIPPED,
            installer + stack.requirements + others + ("--extra-index-url", index_url(cuda)) if others else (),
        ),
        Step(StepKind.VERIFY, "Check that torch imports in the new environment", "a fresh interpreter loads the new stack", argv=verify_argv),
        *((Step(StepKind.VERIFY, "Run the probe ladder in the new environment, through MaskablePPO construct, learn and save/load", "the RL stack works there, not only torch", argv=ladder_argv(new_python)),) if new_python else ()),
    )
    not_carried = tuple(f"not carried, tied to another CUDA family: {t.describe(family or 'cpu')}" for t in tied.values())
    return Plan(
        action="pin-cuda",
        title=f"Pin torch to CUDA {cuda} in a new environment (torch {release.torch}+{variant_tag(cuda)})",
        python=target(facts).python.get("executable", ""),
        installer="pip",
        steps=steps,
        refusal=refusal,
        alternative=True,
        notes=notes + stack.notes + not_carried + ("This environment is left unchanged; activate the new one to use it.",),
        expect=Expectation(torch_version=f"{release.torch}+{variant_tag(cuda)}", torch_imports=True),
        versions=stack.changes,
    )
