"""Whether this machine runs a torch build: its driver for the build's CUDA, its GPUs for the build's kernels.

The release for a `--pin-cuda` is chosen with both (the newest torch whose build for that CUDA has cubins,
or PTX the driver can compile, for every GPU here), and a refusal names what would run instead: the
nearest CUDA builds that do, as the exact `--pin-cuda X.Y` / `--torch V` to ask for them. Arch lists
(knowledge/arches.csv) and driver floors (knowledge/drivers.csv) are read through their readers;
their sources are docs/knowledge/domain-facts.md §1, §4.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from envdoctor.facts import Unrecorded, read, view_of
from envdoctor.facts.gpu import GpuView
from envdoctor.fix.requires import target
from envdoctor.knowledge import arches, drivers, version_tuple
from envdoctor.knowledge.torch_matrix import TorchRelease, releases, variant_tag

ALTERNATIVES_SHOWN = 3


def known_variants() -> List[str]:
    """Every CUDA version some torch release has wheels for, oldest first."""
    return sorted({c for r in releases() for c in r.cuda}, key=version_tuple)


def driver_of(facts: Mapping[str, Any]) -> Optional[str]:
    gpu = read(facts, GpuView)
    return None if isinstance(gpu, Unrecorded) else gpu.driver_version


def driver_verdict(facts: Mapping[str, Any], cuda: str) -> Tuple[Optional[str], Optional[str]]:
    """(refusal, note) about whether the installed driver runs CUDA `cuda`."""
    gpu = read(facts, GpuView)
    driver = driver_of(facts)
    host_os = target(facts).host_os
    least = drivers.minimum_driver(cuda, host_os)
    if not driver:
        why = (gpu.failure if isinstance(gpu, Unrecorded) else gpu.reason) or "no driver facts"
        return None, f"driver unknown ({why}): CUDA {cuda} wheels need driver ≥ {least or 'unknown'}; not checked"
    if drivers.driver_satisfies(driver, cuda, host_os):
        return None, f"driver {driver} runs CUDA {cuda} (needs ≥ {least})"
    runnable = [v for v in known_variants() if drivers.driver_satisfies(driver, v, host_os)]
    older = f" (--pin-cuda {runnable[-1]} runs on it)" if runnable else ""
    return f"driver {driver} is too old for CUDA {cuda}: it needs driver ≥ {least}; update the driver or pin an older CUDA{older}", None


def ptx_driver(facts: Mapping[str, Any], cuda: str) -> Optional[str]:
    """The driver PTX of CUDA `cuda` needs: the toolkit's own, since the driver's compiler JITs it."""
    row = drivers.requirement(cuda)
    return row.toolkit(target(facts).host_os) if row else None


def compiles_ptx(facts: Mapping[str, Any], cuda: str) -> bool:
    """Whether the driver here JIT-compiles PTX of CUDA `cuda`; an unknown driver or floor is not a no."""
    driver, least = driver_of(facts), ptx_driver(facts, cuda)
    return not (driver and least) or version_tuple(driver) >= version_tuple(least)


def gpus(facts: Mapping[str, Any]) -> Tuple[Mapping[str, Any], ...]:
    return tuple(g for g in view_of(facts, GpuView).recorded_gpus if g.get("compute_capability"))


def kernels_for_every_gpu(facts: Mapping[str, Any], release: TorchRelease, cuda: str) -> bool:
    """True when every GPU here has cubins in the build, or PTX the driver can compile; an unknown arch
    list or an unknown driver counts as yes, since nothing says no."""
    tag = variant_tag(cuda)
    if arches.arch_list(tag, release.torch) is None:
        return True
    for gpu in gpus(facts):
        support = arches.support(gpu["compute_capability"], tag, release.torch)
        if support is None or (support == arches.PTX and not compiles_ptx(facts, cuda)):
            return False
    return True


def newest_that_runs(facts: Mapping[str, Any], candidates: Sequence[TorchRelease], cuda: str) -> Optional[TorchRelease]:
    """The newest of `candidates` (oldest first) whose build for `cuda` has kernels for every GPU here;
    the newest of them all when none has, so the refusal can say why."""
    running = [r for r in candidates if kernels_for_every_gpu(facts, r, cuda)]
    return (running or list(candidates) or [None])[-1]


def builds_with(capability: str, release: TorchRelease) -> str:
    """Where kernels for `capability` are: other builds of this torch, else builds of other releases."""
    same = arches.variants_supporting(capability, release.torch)
    if same:
        return f"torch {release.torch} builds that have them: {', '.join(same)}"
    anywhere = arches.variants_supporting(capability)
    return f"no torch {release.torch} build has them; builds of other releases that do: {', '.join(anywhere) or 'none'}"


def arch_verdict(facts: Mapping[str, Any], release: TorchRelease, cuda: str) -> Tuple[Optional[str], Tuple[str, ...]]:
    """(refusal, notes) about whether every GPU has kernels in the chosen build."""
    tag, notes = variant_tag(cuda), []
    if arches.arch_list(tag, release.torch) is None:
        return None, (f"no architecture list known for torch {release.torch}+{tag}; GPU support not checked",)
    for gpu in gpus(facts):
        capability = gpu["compute_capability"]
        support = arches.support(capability, tag, release.torch)
        if support is None:
            return f"{gpu.get('name')} (compute capability {capability}) has no kernels in torch {release.torch}+{tag}; {builds_with(capability, release)}", ()
        if support == arches.PTX:
            notes.append(f"{gpu.get('name')} (compute capability {capability}) runs torch {release.torch}+{tag} only through PTX JIT, which needs driver ≥ {ptx_driver(facts, cuda) or 'unknown'}")
    return None, tuple(notes)


def forced(refusal: Optional[str], notes: Tuple[str, ...], force: bool) -> Tuple[Optional[str], Tuple[str, ...]]:
    """--force turns a refusal into a note that says what was overridden."""
    if refusal and force:
        return None, notes + (f"--force: planned although {refusal}",)
    return refusal, notes


def hardware_verdict(facts: Mapping[str, Any], release: TorchRelease, cuda: str, force: bool) -> Tuple[Optional[str], Tuple[str, ...]]:
    """(refusal, notes) from the driver and the GPUs for `release` built with `cuda`."""
    driver_refusal, driver_note = driver_verdict(facts, cuda)
    refusal, notes = forced(driver_refusal, tuple(n for n in (driver_note,) if n), force)
    arch_refusal, arch_notes = forced(*arch_verdict(facts, release, cuda), force)
    return refusal or arch_refusal, notes + arch_notes


@dataclass(frozen=True)
class Alternative:
    """A pin that runs on this machine: the options to ask for it and the build it gets."""

    cuda: str
    release: TorchRelease
    named: bool  # needs --torch: the newest release for this CUDA does not run here

    @property
    def options(self) -> str:
        return f"--pin-cuda {self.cuda}" + (f" --torch {self.release.torch}" if self.named else "")

    def describe(self) -> str:
        return f"envdoctor fix {self.options}  (torch {self.release.torch}+{variant_tag(self.cuda)})"


def runs_here(facts: Mapping[str, Any], release: TorchRelease, cuda: str) -> bool:
    """The driver runs `cuda` and every GPU has kernels in the build (what is unknown is not a no)."""
    driver = driver_of(facts)
    driver_runs = not driver or drivers.driver_satisfies(driver, cuda, target(facts).host_os)
    return driver_runs and kernels_for_every_gpu(facts, release, cuda)


def cuda_number(cuda: str) -> int:
    """ "12.8" -> 128: CUDA minors stay below 10, so distances between versions are differences."""
    major, minor = version_tuple(cuda)[:2]
    return major * 10 + minor


def alternatives(facts: Mapping[str, Any], asked: str, minor: Optional[str]) -> Tuple[Alternative, ...]:
    """The nearest CUDA versions whose newest fitting release runs on this machine, for Python `minor`
    (any Python when None: a new environment brings its own)."""
    found = []
    for cuda in known_variants():
        fitting = [r for r in releases() if cuda in r.cuda and (minor is None or minor in r.python)]
        running = [r for r in fitting if runs_here(facts, r, cuda)]
        if running:
            found.append(Alternative(cuda, running[-1], named=running[-1] is not fitting[-1]))
    nearest = sorted(found, key=lambda a: (abs(cuda_number(a.cuda) - cuda_number(asked)), -cuda_number(a.cuda)))
    return tuple(nearest[:ALTERNATIVES_SHOWN])
