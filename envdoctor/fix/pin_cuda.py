"""`fix --pin-cuda X.Y`: one consistent torch + CUDA stack in the target environment.

The newest torch release with a cuXY build for the target's Python whose build has kernels for every
GPU here (fix/hardware.py) is chosen from the knowledge matrix (or the one named), with the
torchvision/torchaudio of the same minor, exact `+cuXY` versions and the index form of that era. The
whole resulting set of versions is decided before the plan is shown (fix/stack.py, fix/resolve.py):
every package the pin breaks is put back at a release whose metadata admits it, or said lost with the
reason; NVIDIA wheels and builds of other CUDA families go, the latter replaced by their counterpart.
The plan is refused, with no step left that would build the refused stack and with the pins that do
run here, when the driver is known to be too old or a GPU has no kernels in that build; when no build
fits the Python, a new environment is planned instead (fix/new_env.py).

Where conda installed torch (a `pytorch` record owns the torch that loads), the plan is conda's own
command from knowledge/conda_torch.csv (`pytorch==1.13.1 pytorch-cuda=11.6 -c pytorch -c nvidia`, or
`cudatoolkit=` before 1.13); an environment where both installers put a torch is refused until one goes,
so the two installers are never mixed silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from packaging.version import Version

from envdoctor.errors import UsageError
from envdoctor.facts import view_of
from envdoctor.facts.conda import CondaView, shown
from envdoctor.facts.target import normalize, parse_version
from envdoctor.fix.cuda_tied import tied_packages
from envdoctor.fix.hardware import alternatives, hardware_verdict, known_variants, newest_that_runs
from envdoctor.fix.installer import Installer
from envdoctor.fix.new_env import choose, plan_new_environment
from envdoctor.fix.plan import Expectation, Plan, Step, StepKind, StepStatus
from envdoctor.fix.releases import OFFLINE, ReleaseIndex
from envdoctor.fix.requires import families_installed, families_needed, target
from envdoctor.fix.stack import COMPANIONS, Stack, index_flags, resolve_stack, satisfied
from envdoctor.fix.verify import import_torch_argv, ladder_argv
from envdoctor.knowledge.conda import CondaBuild, builds, builds_for
from envdoctor.knowledge.conda import install_args as conda_install_args
from envdoctor.knowledge.torch_matrix import TorchRelease, find, releases, variant_tag
from envdoctor.knowledge.wheels import torch_family

CUDA_VERSION = re.compile(r"^\d+\.\d+$")
UNKNOWN_MINOR = "0.0"  # how a plan names the Python of a report that does not record it



@dataclass(frozen=True)
class Request:
    """What the user asked for."""

    cuda: str
    torch: Optional[str] = None
    with_packages: Tuple[str, ...] = ()
    force: bool = False


def conda_of(facts: Mapping[str, Any]) -> CondaView:
    """The conda view the planners read (an empty one where the facts have none)."""
    return view_of(facts, CondaView)


def validate(request: Request) -> Optional[TorchRelease]:
    """The release named by --torch, checked against the matrix; bad input is a usage error."""
    if not CUDA_VERSION.match(request.cuda) or request.cuda not in known_variants():
        raise UsageError(f"--pin-cuda {request.cuda}: torch has wheels for CUDA {', '.join(known_variants())}")
    unknown = [p for p in request.with_packages if p not in COMPANIONS]
    if unknown:
        raise UsageError(f"--with {', '.join(unknown)}: only {' and '.join(COMPANIONS)} are versioned with torch")
    if not request.torch:
        return None
    release = find(request.torch)
    if release is None:
        raise UsageError(f"--torch {request.torch}: not in the torch matrix ({releases()[0].torch} … {releases()[-1].torch})")
    if request.torch.count(".") >= 2 and request.torch != release.torch:
        raise UsageError(f"--torch {request.torch}: the matrix pairs torchvision/torchaudio with {release.torch}; ask for {release.torch}")
    if request.cuda not in release.cuda:
        raise UsageError(f"--torch {release.torch} has no CUDA {request.cuda} build (it has {', '.join(release.cuda)})")
    return release


def choose_release(facts: Mapping[str, Any], request: Request, named: Optional[TorchRelease]) -> Optional[TorchRelease]:
    """The newest release with a cuXY build for the target's Python that has kernels for every GPU
    here (or the named one if it fits the Python); None when no build fits the Python."""
    minor = target(facts).python_minor or UNKNOWN_MINOR
    candidates = [named] if named else [r for r in releases() if request.cuda in r.cuda]
    return newest_that_runs(facts, [r for r in candidates if minor in r.python], request.cuda)


def packages_for(facts: Mapping[str, Any], release: TorchRelease, request: Request) -> Tuple[List[str], List[str]]:
    """torch plus the companions that are installed or asked for, and those the release has no version of."""
    present = target(facts).distributions
    wanted = [n for n in COMPANIONS if n in present or n in request.with_packages]
    return ["torch", *(n for n in wanted if release.companion(n))], [n for n in wanted if not release.companion(n)]


def keep_step(facts: Mapping[str, Any], name: str, release: TorchRelease) -> Step:
    version = target(facts).distributions.get(name, {}).get("version", "(not installed)")
    return Step(StepKind.INSTALL, f"Keep {name} {version}", f"no {name} was released for torch {release.torch}; it does not pin torch", StepStatus.SKIPPED)


def uninstall_step(installer: Installer, names: Sequence[str], summary: str, reason: str, nothing: str) -> Step:
    if not names:
        return Step(StepKind.UNINSTALL, summary, nothing, StepStatus.SKIPPED)
    return Step(StepKind.UNINSTALL, summary, reason, argv=installer.uninstall(names))


def install_step(facts: Mapping[str, Any], installer: Installer, stack: Stack, flags: Sequence[str], why: str) -> Step:
    """One installer run for the whole stack, so the installer decides every version together."""
    summary = f"Install {' '.join(stack.requirements)}"
    if satisfied(facts, stack.requirements):
        return Step(StepKind.INSTALL, summary, "already installed at exactly these versions", StepStatus.SKIPPED)
    return Step(StepKind.INSTALL, summary, why, argv=installer.install((*stack.requirements, *flags)))


def put_back_words(stack: Stack) -> str:
    kept = [c for c in stack.changes if not c.lost]
    return f"; with it, {', '.join(c.requirement for c in kept)} put back (see the versions below)" if kept else ""


def python_of(facts: Mapping[str, Any]) -> Version:
    """The target's Python as a version; a report without a readable one plans for the oldest Python any torch has."""
    return parse_version(target(facts).python_version) or Version("3.0")


def dependents_note(facts: Mapping[str, Any], removed_families: Sequence[str]) -> Tuple[str, ...]:
    """Who else loses CUDA libraries when a family goes (torch itself is being replaced)."""
    needed = families_needed(facts, excluding=("torch", *COMPANIONS))
    return tuple(
        f"{', '.join(needed[f])} also require{'s' if len(needed[f]) == 1 else ''} {f} wheels and lose them"
        for f in removed_families
        if f in needed
    )


def same_variant_note(facts: Mapping[str, Any], release: TorchRelease, cuda: str) -> Tuple[str, ...]:
    """When the installed torch already is a build for this CUDA, say how to keep its version."""
    build = target(facts).torch_facts
    version, built_for = build.get("version") or "", build.get("cuda") or ""
    installed_release = find(version) if version else None
    if built_for != cuda or installed_release is None or installed_release.torch == release.torch:
        return ()
    return (f"torch {version} is already a {variant_tag(cuda)} build; `--torch {installed_release.torch}` keeps its version",)


def plan_new_environment_for(facts: Mapping[str, Any], request: Request, named: Optional[TorchRelease], index: ReleaseIndex) -> Plan:
    """No build for the asked CUDA fits the target's Python: plan a separate environment instead."""
    release, python = choose(facts, request.cuda, named)
    refusal, notes = hardware_verdict(facts, release, request.cuda, request.force)
    packages = ["torch", *(n for n in COMPANIONS if n in target(facts).distributions or n in request.with_packages)]
    tag, minor = variant_tag(request.cuda), target(facts).python_minor or UNKNOWN_MINOR
    no_fit = f"no torch build for CUDA {request.cuda} supports Python {minor} (torch {release.torch} {tag} wheels need Python {release.python[0]}–{release.python[-1]})"
    plan = plan_new_environment(facts, release, python, request.cuda, packages, no_fit, notes, index)
    # A driver or GPU that cannot run the build blocks the new environment as much as this one.
    return replace(plan, refusal=f"{refusal}; besides, {no_fit}", alternative=False, notes=notes) if refusal else plan


def conda_refusal(facts: Mapping[str, Any], request: Request, reason: str) -> Plan:
    return Plan(
        action="pin-cuda",
        title=f"Pin torch to CUDA {request.cuda} in the conda environment {conda_of(facts).environment.get('prefix')}",
        python=target(facts).executable,
        installer="conda",
        steps=(),
        refusal=reason,
    )


def conda_build(facts: Mapping[str, Any], request: Request, named: Optional[TorchRelease]) -> Optional[CondaBuild]:
    """The newest conda build for the asked CUDA that fits the target's Python (of the named release if any)."""
    fitting = [b for b in builds_for(request.cuda, target(facts).python_minor or UNKNOWN_MINOR) if named is None or b.torch == named.torch]
    return fitting[-1] if fitting else None


def pip_family_step(facts: Mapping[str, Any], installer: Installer, family: Optional[str]) -> Step:
    """pip's NVIDIA wheels of other families go with pip, which installed them, said in the step itself."""
    stray = sorted(d["name"] for major, dists in conda_of(facts).pip_cuda_majors().items() if f"cu{major}" != family for d in dists)
    return uninstall_step(
        installer, stray,
        "Remove pip's NVIDIA wheels of other CUDA families, with pip, which installed them",
        "conda's torch uses conda's CUDA libraries; pip's wheels of another family beside them get mixed into one process",
        "pip installed no NVIDIA wheels of another CUDA family",
    )


def plan_conda_pin_cuda(facts: Mapping[str, Any], installer: Installer, request: Request, named: Optional[TorchRelease]) -> Plan:
    """The plan in conda's terms, for an environment whose torch conda installed."""
    build = conda_build(facts, request, named)
    minor = target(facts).python_minor or UNKNOWN_MINOR
    if build is None:
        known = ", ".join(sorted({f"{b.torch}+cuda{b.cuda}" for b in builds()}))
        return conda_refusal(facts, request, (
            f"PyTorch published no conda build {'of torch ' + named.torch + ' ' if named else ''}for CUDA {request.cuda} and Python {minor} "
            f"(conda builds: {known}); a pip torch here would mix installers: remove conda's pytorch first, then plan again"
        ))
    release = find(build.torch)
    refusal, notes = hardware_verdict(facts, release, request.cuda, request.force)
    conda = conda_of(facts)
    present = set(target(facts).distributions) | set(conda.records)
    companions = [n for n in COMPANIONS if n in present or n in request.with_packages]
    args = conda_install_args(build, companions)
    prefix = str(conda.environment.get("prefix"))
    family = torch_family(request.cuda)
    steps = (
        pip_family_step(facts, installer, family),
        Step(StepKind.INSTALL, f"Install {' '.join(a for a in args if '=' in a)} with conda", f"conda installed this torch; {build.source}", argv=(conda.manager, "install", "-y", "-p", prefix, *args)),
        Step(StepKind.VERIFY, f"Check that torch {build.torch} imports", "a fresh interpreter loads the new stack", argv=import_torch_argv(installer.python)),
    )
    return Plan(
        action="pin-cuda",
        title=f"Pin torch to CUDA {request.cuda} with conda: pytorch {build.torch} for Python {minor}",
        python=installer.python,
        installer="conda",
        steps=steps,
        refusal=refusal,
        notes=notes + ("conda records each change: `conda list --revisions` lists them and `conda install --revision N` returns to one",),
        expect=Expectation(torch_version=build.torch, torch_imports=True),
    )


def conda_installed_torch(facts: Mapping[str, Any], request: Request, installer: Installer, named: Optional[TorchRelease]) -> Optional[Plan]:
    """The conda plan, or a refusal when conda and pip both put a torch here; None where pip's plan applies."""
    conda = conda_of(facts)
    record = conda.conda_torch
    if record is None:
        return None
    pip_torches = [d for d in conda.all_distributions if normalize(str(d.get("name"))) == "torch" and conda.installed_by(d) == "pip"]
    if pip_torches:
        return conda_refusal(facts, request, (
            f"torch is installed by conda ({shown(record)}) and by pip (torch {pip_torches[0].get('version')}); "
            "planning with either would mix the two installers: keep one first (see the conda.two-torches finding of envdoctor check)"
        ))
    return plan_conda_pin_cuda(facts, installer, request, named)


def conda_cuda_note(facts: Mapping[str, Any]) -> Tuple[str, ...]:
    """In a conda environment pip plans for pip's torch only; what conda installed stays, and is said to."""
    cuda_records = [shown(r) for rs in conda_of(facts).conda_cuda_majors().values() for r in rs]
    if not cuda_records:
        return ()
    return (f"conda installed CUDA packages here ({', '.join(cuda_records)}); this plan changes only what pip installed, and `envdoctor check` judges the two together (conda.mixed-cuda)",)


def refused(facts: Mapping[str, Any], plan: Plan, request: Request) -> Plan:
    """A refusal keeps no step that would build the refused stack, and says what would run here instead."""
    if not plan.blocked:
        return plan
    minor = target(facts).python_minor
    found = alternatives(facts, request.cuda, minor) or alternatives(facts, request.cuda, None)
    return replace(plan, steps=(), instead=tuple(a.describe() for a in found))


def plan_pin_cuda(facts: Mapping[str, Any], installer: Installer, request: Request, index: ReleaseIndex = OFFLINE) -> Plan:
    """The plan for `fix --pin-cuda`: facts in, plan out; `index` answers what other releases require."""
    return refused(facts, planned(facts, installer, request, index), request)


def planned(facts: Mapping[str, Any], installer: Installer, request: Request, index: ReleaseIndex) -> Plan:
    named = validate(request)
    conda_plan = conda_installed_torch(facts, request, installer, named)
    if conda_plan is not None:
        return conda_plan
    release = choose_release(facts, request, named)
    if release is None:
        return plan_new_environment_for(facts, request, named, index)
    cuda, tag, minor = request.cuda, variant_tag(request.cuda), target(facts).python_minor or UNKNOWN_MINOR
    refusal, notes = hardware_verdict(facts, release, request.cuda, request.force)
    family = torch_family(cuda)
    present_families = families_installed(facts)
    other_families = [f for f in present_families if f != family]
    stray = sorted(n for f in other_families for n in present_families[f])
    packages, unreleased = packages_for(facts, release, request)
    new_torch = f"{release.torch}+{tag}"
    tied = [t for t in tied_packages(facts, family, index).values() if t.by_name]
    builds = sorted(t.name for t in tied)
    counterparts = [t.requirement() for t in tied if t.counterpart]
    stack = resolve_stack(facts, release, cuda, packages, python_of(facts), index, skip=(*stray, *builds), extra=counterparts)
    lost = [c for c in stack.changes if c.lost]
    why = f"asked with --torch {request.torch}" if named else f"the newest torch with a {tag} build for Python {minor}"
    steps = (
        uninstall_step(
            installer, [*stray, *builds],
            f"Remove the NVIDIA wheels of other CUDA families ({', '.join(other_families) or 'none'})" + (f" and the packages built for them: {', '.join(builds)}" if builds else ""),
            f"torch {new_torch} uses {family} libraries; {', '.join(sorted({*other_families, *(t.family for t in tied)}))} wheels beside them get mixed into one process"
            + "".join(f"; {t.describe(family or 'cpu')}" for t in tied),
            f"no NVIDIA wheels of a family other than {family} are installed",
        ),
        uninstall_step(
            installer, sorted(c.name for c in lost),
            f"Remove the packages that cannot stay beside torch {new_torch}: {', '.join(c.name for c in lost) or 'none'}",
            "; ".join(c.describe() for c in lost),
            "every installed package that excludes the new stack is put back at a release that admits it" if stack.changes else f"no installed package excludes torch {new_torch}",
        ),
        install_step(facts, installer, stack, index_flags(release, cuda, stack), f"{why} (torch {release.torch} supports Python {release.python[0]}–{release.python[-1]}){put_back_words(stack)}"),
        *(keep_step(facts, name, release) for name in unreleased if normalize(name) not in {normalize(c.name) for c in stack.changes}),
        Step(StepKind.VERIFY, f"Check that torch imports as {new_torch}", "a fresh interpreter loads the new stack", argv=import_torch_argv(installer.python)),
        Step(
            StepKind.VERIFY, "Run the probe ladder: numpy, torch, CUDA, gymnasium, stable_baselines3, sb3_contrib, MaskablePPO construct, learn, save/load",
            "every stage that passed before the fix must pass after it; --apply runs it before and after, and rolls back if one does not",
            argv=ladder_argv(installer.python),
        ),
    )
    return Plan(
        action="pin-cuda",
        title=f"Pin torch to CUDA {cuda}: torch {new_torch} for Python {minor}",
        python=installer.python,
        installer=installer.name,
        steps=steps,
        refusal=refusal,
        notes=notes + stack.notes + same_variant_note(facts, release, cuda) + dependents_note(facts, other_families) + conda_cuda_note(facts),
        expect=Expectation(
            installed=stack.planned_versions,
            absent=tuple(stray) + tuple(builds) + stack.lost,
            torch_version=new_torch,
            torch_imports=True,
            families=(family,) if family else (),
            ladder=True,
        ),
        versions=stack.changes,
    )
