"""The aspects of an environment that decide whether a run moved from A to B survives, in rank order.

Each aspect reads one value per report and judges a difference: how likely it is to break the run and
why, in one line. Most judgements are fixed; a few depend on the direction (B lacking CPU instructions
A has is fatal, B having more is not) and on B's own stack (B's driver against B's torch).

Sources: docs/knowledge/domain-facts.md §1 (driver floors), §3 (NVIDIA wheel families), §4 (GPU architectures),
§5 (WSL), §6 (CPU instructions, ATEN_CPU_CAPABILITY), §7 (threads); docs/knowledge/sb3-model-files.md §3b, §3c (cloudpickled
closures are Python-version bytecode), NumPy 2.0 migration guide (C ABI, numpy._core pickles).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, List, Mapping, Optional, Tuple

from envdoctor.compare import readers
from envdoctor.compare.model import Difference, Impact, Uncompared
from envdoctor.compare.readers import NONE, NO_GPU, NOT_INSTALLED, flags_of
from envdoctor.facts import RawFacts as Facts
from envdoctor.facts import CachedFacts
from envdoctor.facts import Unrecorded, read
from envdoctor.facts.conda import CondaView, mapping
from envdoctor.facts.environ import THREAD_VARIABLES
from envdoctor.facts.gpu import GpuView
from envdoctor.facts.system import SystemView
from envdoctor.facts.target import TargetView
from envdoctor.knowledge import version_tuple
from envdoctor.knowledge.arches import arch_list, support
from envdoctor.knowledge.drivers import driver_satisfies
from envdoctor.knowledge.wheels import torch_family

Judge = Callable[[str, str, Facts, Facts], Tuple[Impact, str]]


@dataclass(frozen=True)
class Aspect:
    """One thing to compare: how to read it, and how to judge a difference from A to B."""

    id: str
    label: str
    read: Callable[[Facts], readers.Value]
    judge: Judge


def fixed(impact: Impact, why: str) -> Judge:
    return lambda a, b, facts_a, facts_b: (impact, why)


def driver_of(facts: Facts) -> Tuple[Optional[str], str]:
    """A report's driver version and the OS whose driver table applies to it."""
    gpu, system = read(facts, GpuView), read(facts, SystemView)
    version = None if isinstance(gpu, Unrecorded) else gpu.driver_version
    return version, "linux" if isinstance(system, Unrecorded) else system.host_os


def torch_build_of(facts: Facts) -> dict:
    target = read(facts, TargetView)
    return {} if isinstance(target, Unrecorded) else dict(target.torch_facts)


def presence(b: str) -> Tuple[Impact, str]:
    if b == NOT_INSTALLED:
        return Impact.BREAKS, "Not installed on B: the run stops where it imports it"
    return Impact.CHANGES, "Installed on B only"


def installed(judge: Judge) -> Judge:
    """`judge` when the package is installed on both sides; its absence on one side judged as such."""

    def judged(a: str, b: str, facts_a: Facts, facts_b: Facts) -> Tuple[Impact, str]:
        return presence(b) if NOT_INSTALLED in (a, b) else judge(a, b, facts_a, facts_b)

    return judged


def judge_torch(a: str, b: str, facts_a: Facts, facts_b: Facts) -> Tuple[Impact, str]:
    variant = readers.variant_of(torch_build_of(facts_b))
    if variant == readers.variant_of(torch_build_of(facts_a)):
        return Impact.MAY_BREAK, "Checkpoints, TorchScript and compiled artifacts are tied to a torch version; kernels and defaults change"
    if variant == "cpu":
        return Impact.BREAKS, "B's torch is a CPU build: code that used CUDA on A fails on B or silently trains on the CPU"
    return Impact.BREAKS, f"B's torch is a {variant} build: it needs that variant's driver floor, NVIDIA wheels and GPU kernels"


def judge_driver(a: str, b: str, facts_a: Facts, facts_b: Facts) -> Tuple[Impact, str]:
    if b == NONE:
        return Impact.BREAKS, "B has no NVIDIA driver: CUDA code from A fails on B or silently runs on the CPU"
    version, os_name = driver_of(facts_b)
    cuda = torch_build_of(facts_b).get("cuda")
    if cuda and not driver_satisfies(version, str(cuda), os_name):
        return Impact.BREAKS, f"B's driver is too old for the CUDA {cuda} build of torch on B: CUDA initialisation fails"
    older = a != NONE and version_tuple(driver_of(facts_a)[0] or "") > version_tuple(version or "")
    if older:
        return Impact.MAY_BREAK, "B's driver is older than A's: a CUDA build or extension that ran on A may need a newer driver on B"
    return Impact.CHANGES, "B's driver differs from A's; a newer driver still runs builds made for an older one"


def judge_gpu_architecture(a: str, b: str, facts_a: Facts, facts_b: Facts) -> Tuple[Impact, str]:
    if b == NO_GPU:
        return Impact.BREAKS, "B has no NVIDIA GPU: CUDA code from A fails on B or silently runs on the CPU"
    build = torch_build_of(facts_b)
    variant, version = readers.variant_of(build), build.get("version")
    if variant.startswith("cu") and arch_list(variant, version):
        lacking = [cc for cc in b.split(", ") if support(cc, variant, version) is None]
        if lacking:
            return Impact.BREAKS, (
                f"torch {version} on B has no kernels for compute capability {', '.join(lacking)}: "
                "'no kernel image is available for execution on the device'"
            )
    return Impact.MAY_BREAK, "Another GPU architecture: torch runs other kernels, and a build without kernels for it fails on B"


def judge_wheel_families(a: str, b: str, facts_a: Facts, facts_b: Facts) -> Tuple[Impact, str]:
    families = [] if b == NONE else b.split("+")
    wanted = torch_family(torch_build_of(facts_b).get("cuda"))
    if len(families) > 1:
        return Impact.BREAKS, "B mixes CUDA families: torch may load a cuDNN/cuBLAS it was not built with and segfault"
    if families and wanted and families != [wanted]:
        return Impact.BREAKS, f"torch on B was built for {wanted}: it loads CUDA libraries of another family and fails or segfaults"
    if wanted and not families:
        return Impact.MAY_BREAK, "torch on B is a CUDA build without NVIDIA wheels: its CUDA libraries must come from the system"
    if NONE in (a, b):
        return Impact.CHANGES, "The NVIDIA wheels follow B's torch build"
    return Impact.MAY_BREAK, "Another CUDA family: extensions built against A's cuDNN/cuBLAS may not load on B"


def judge_instruction_sets(a: str, b: str, facts_a: Facts, facts_b: Facts) -> Tuple[Impact, str]:
    lacking = [flag for flag in flags_of(a) if flag not in flags_of(b)]
    if lacking:
        return Impact.BREAKS, f"B lacks {' '.join(lacking)}: code built for or tuned on A's CPU dies on B with SIGILL (illegal instruction)"
    return Impact.CHANGES, "B has instruction sets A lacks: nothing from A needs them, but B runs other kernels"


def judge_glibc(a: str, b: str, facts_a: Facts, facts_b: Facts) -> Tuple[Impact, str]:
    if NONE not in (a, b) and version_tuple(b) < version_tuple(a):
        return Impact.MAY_BREAK, "B's glibc is older: wheels built for A's may refuse to import on B (torch >= 2.7 needs glibc 2.28)"
    return Impact.CHANGES, "B's glibc differs; wheels built for an older glibc still import on a newer one"


NOT_CONDA = "not a conda environment"


def conda_value(read_conda: Callable[[CondaView], str]) -> Callable[[Facts], readers.Value]:
    """A reader of the report's conda facts: NOT_CONDA outside conda, Unrecorded where a report has none."""

    def reader(facts: Facts) -> readers.Value:
        conda = read(facts, CondaView)
        if isinstance(conda, Unrecorded):
            return conda
        if conda.unrecorded:
            return conda.unrecorded
        return read_conda(conda) if conda.environment else NOT_CONDA

    return reader


def names_versions(records: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(f"{r.get('name')} {r.get('version')}" for r in records)


@conda_value
def conda_cuda(conda: CondaView) -> str:
    """ "11: cudatoolkit 11.3.1, pytorch 1.12.1": the CUDA majors of what conda installed."""
    grouped = conda.conda_cuda_majors()
    return "; ".join(f"{major}: {names_versions(records)}" for major, records in grouped.items()) or NONE


@conda_value
def conda_cxx_runtime(conda: CondaView) -> str:
    """ "GLIBCXX_3.4.28 (env)": the highest version the libstdc++ that loads provides, and whose it is."""
    loaded = mapping(mapping(conda.environment.get("cxx_runtime")).get("loaded"))
    library = mapping(loaded.get("library"))
    return f"GLIBCXX_{library['glibcxx']} ({loaded.get('via')})" if library.get("glibcxx") else NONE


@conda_value
def conda_openmp(conda: CondaView) -> str:
    """ "libiomp5; pip bundles libgomp": the OpenMP runtimes conda installs, and those pip's wheels add."""
    conda_side, pip_side = conda.conda_openmp(), conda.pip_openmp()
    added = sorted(set(pip_side) - set(conda_side))
    return "+".join(sorted(conda_side) or [NONE]) + (f"; pip bundles {'+'.join(added)}" if added else "")


def judge_conda_cuda(a: str, b: str, facts_a: Facts, facts_b: Facts) -> Tuple[Impact, str]:
    if NOT_CONDA in (a, b):
        return Impact.MAY_BREAK, "One side is a conda environment: its CUDA, BLAS and C++ runtime come from conda, the other's from pip or the system"
    if NONE in (a, b) or a.split(":", 1)[0] != b.split(":", 1)[0]:
        return Impact.BREAKS, "conda's CUDA libraries differ in major: a conda torch or extension built on A loads libraries of another CUDA on B"
    return Impact.MAY_BREAK, "conda's CUDA packages differ within one major: cuDNN/cuBLAS versions change numerics and kernels"


def glibcxx_of(value: str) -> Tuple[int, ...]:
    """ "GLIBCXX_3.4.28 (env)" -> (3, 4, 28); () for NONE and NOT_CONDA."""
    return version_tuple(value[len("GLIBCXX_"):].split(" ", 1)[0]) if value.startswith("GLIBCXX_") else ()


def judge_conda_cxx_runtime(a: str, b: str, facts_a: Facts, facts_b: Facts) -> Tuple[Impact, str]:
    if glibcxx_of(b) < glibcxx_of(a):
        return Impact.BREAKS, "B loads an older libstdc++: an extension that imports on A can fail on B with \"version `GLIBCXX_...' not found\""
    return Impact.CHANGES, "Another libstdc++ loads on B; a newer one still provides every older version"


THREADING_WHY = {
    **{name: "Thread-pool size: oversubscribed pools slow runs down and exhaust OpenBLAS buffers; SubprocVecEnv multiplies them" for name in THREAD_VARIABLES},
    "MKL_THREADING_LAYER": "Chooses MKL's OpenMP runtime: it decides whether libgomp and libiomp meet in one process",
    "KMP_DUPLICATE_LIB_OK": "Masks two OpenMP runtimes in one process: where unset the process aborts (OMP Error #15), where set it may crash later",
    "KMP_AFFINITY": "Pins OpenMP threads to cores: a pinning that fits A's cores can pile B's threads onto a few",
}
SB3_PACKAGES = {
    "gymnasium": "Environment API and spaces change between gymnasium versions; saved models record their spaces",
    "stable-baselines3": "SB3 model zips are read by the SB3 that loads them; another version can refuse or misread A's models",
    "sb3-contrib": "sb3-contrib's algorithms (MaskablePPO, RecurrentPPO) must match the SB3 they were saved with",
}

ASPECTS: Tuple[Aspect, ...] = (
    Aspect("system.platform", "OS and CPU architecture", readers.platform, fixed(
        Impact.BREAKS, "Other wheels, native libraries and multiprocessing start method (fork on Linux, spawn on macOS and Windows)")),
    Aspect("system.wsl", "WSL", readers.wsl, fixed(
        Impact.BREAKS, "WSL2 runs its own kernel and the Windows driver's CUDA projection; native crashes in torch's BLAS/OpenMP code are tied to it")),
    Aspect("python.minor", "Python", readers.python_minor, fixed(
        Impact.BREAKS, "SB3 pickles learning_rate/clip_range closures as bytecode of one Python minor version; another one can crash loading them")),
    Aspect("torch", "torch", readers.torch, installed(judge_torch)),
    Aspect("cuda.driver", "NVIDIA driver", readers.driver, judge_driver),
    Aspect("gpu.architecture", "GPU compute capability", readers.gpu_architecture, judge_gpu_architecture),
    Aspect("wheels.families", "NVIDIA wheel families", readers.wheel_families, judge_wheel_families),
    Aspect("conda.cuda", "CUDA packages from conda", conda_cuda, judge_conda_cuda),
    Aspect("conda.cxx-runtime", "C++ runtime that loads (conda)", conda_cxx_runtime, judge_conda_cxx_runtime),
    Aspect("conda.openmp", "OpenMP runtimes (conda, pip bundled)", conda_openmp, fixed(
        Impact.MAY_BREAK, "Another set of OpenMP runtimes: Intel and LLVM OpenMP together crash; MKL beside pip's libgomp may refuse to start")),
    Aspect("numpy.major", "NumPy major", readers.numpy_major, installed(fixed(
        Impact.BREAKS, "NumPy 2 changed the C ABI and pickle paths: extensions built for 1.x fail under 2.x, arrays pickled under 2.x fail under 1.x"))),
    Aspect("cpu.instruction-sets", "CPU instruction sets", readers.instruction_sets, judge_instruction_sets),
    *(Aspect(f"package.{name}", name, readers.package(name), installed(fixed(Impact.MAY_BREAK, why))) for name, why in SB3_PACKAGES.items()),
    *(Aspect(f"threads.{name}", name, readers.variable(name), fixed(Impact.MAY_BREAK, why)) for name, why in THREADING_WHY.items()),
    Aspect("system.kernel", "Kernel", readers.kernel, fixed(
        Impact.MAY_BREAK, "Native crashes in BLAS/OpenMP code have been tied to particular kernels, WSL2's above all")),
    Aspect("system.glibc", "glibc", readers.glibc, judge_glibc),
    Aspect("torch.cpu-capability", "torch CPU kernels", readers.torch_cpu_capability, fixed(
        Impact.CHANGES, "torch dispatches other CPU kernels: last-bit numerics differ and a kernel bug shows on one machine only")),
    Aspect("gpu.models", "GPU models", readers.gpu_models, fixed(
        Impact.CHANGES, "Another GPU: memory limits, speed and TF32 defaults differ")),
)
VARIABLES_READ = frozenset(THREADING_WHY) | {"ATEN_CPU_CAPABILITY"}
PACKAGES_READ = frozenset(SB3_PACKAGES) | {"torch"}


def compare_aspect(aspect: Aspect, facts_a: Facts, facts_b: Facts):
    """A Difference, an Uncompared, or None when both sides hold the same value."""
    a, b = aspect.read(facts_a), aspect.read(facts_b)
    for side, value in (("A", a), ("B", b)):
        if isinstance(value, Unrecorded):
            return Uncompared(aspect.id, aspect.label, f"{side}: {value.reason}")
    if a == b:
        return None
    impact, why = aspect.judge(a, b, facts_a, facts_b)
    return Difference(aspect.id, aspect.label, a, b, impact, why)


def ranked_differences(facts_a: Facts, facts_b: Facts) -> Tuple[List[Difference], List[Uncompared]]:
    """The differing aspects, most likely to break first (ties in aspect order), and those not compared."""
    views_a, views_b = CachedFacts(facts_a), CachedFacts(facts_b)  # each section's view built once per report
    results = [compare_aspect(aspect, views_a, views_b) for aspect in ASPECTS]
    differences = [r for r in results if isinstance(r, Difference)]
    position = {aspect.id: i for i, aspect in enumerate(ASPECTS)}
    differences.sort(key=lambda d: (d.impact.rank, position[d.aspect]))
    return differences, [r for r in results if isinstance(r, Uncompared)]
