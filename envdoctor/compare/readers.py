"""Readers: one comparable value per aspect of a report's facts, as the text a user reads.

Reports differ in what they record (an older envdoctor, a collector that failed with `{"error": ...}`),
so a reader answers `Unrecorded(reason)` instead of guessing, and the aspect is shown as not compared.
Absence that is itself a fact ("torch not installed", "no GPU") is a value like any other. Readers take
the typed views of envdoctor.facts, which have already refused sections of the wrong shape.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, Tuple, Union

from envdoctor.facts import RawFacts, Unrecorded, UnusableFacts, read, unusable
from envdoctor.facts.cpu import CpuView
from envdoctor.facts.environ import EnvironView
from envdoctor.facts.gpu import GpuView
from envdoctor.facts.system import SystemView
from envdoctor.facts.target import TargetView, normalize

NOT_INSTALLED = "not installed"
UNSET = "unset"
NO_GPU = "no GPU"
NONE = "none"
# The instruction sets that decide which kernels a wheel may run (x86 and ARM spellings of /proc/cpuinfo).
INSTRUCTION_SETS = (
    "sse4_1", "sse4_2", "popcnt", "avx", "avx2", "fma", "f16c", "bmi2",
    "avx512f", "avx512vl", "avx512bw", "avx512dq", "avx512_vnni", "avx512_bf16", "amx_tile",
    "asimd", "sve", "sve2",
)

Value = Union[str, Unrecorded]


def needs(*kinds: type):
    """Give a reader the views of the named sections, or answer Unrecorded when one is missing, failed,
    or of the wrong shape (worded for all the sections the reader needs, as `diff` always said it)."""

    def wrap(read_views: Callable[..., str]) -> Callable[[RawFacts], Value]:
        @functools.wraps(read_views)
        def reader(facts: RawFacts) -> Value:
            views = [read(facts, kind) for kind in kinds]
            missing = next((v for v in views if isinstance(v, Unrecorded)), None)
            if missing is None:
                try:
                    return read_views(*views)
                except UnusableFacts as error:  # a field checked when it is read (GpuView.driver)
                    missing = error.unrecorded
            if missing.shape:
                return Unrecorded(unusable(" and ".join(k.SECTION for k in kinds) + " facts", missing.shape), missing.section, shape=missing.shape)
            return missing

        return reader

    return wrap


@needs(SystemView)
def platform(system: SystemView) -> str:
    return f"{system.os or '?'} {system.machine or '?'}"


@needs(SystemView)
def wsl(system: SystemView) -> str:
    kind = system.wsl_kind
    return kind.upper() if kind else "no"


@needs(SystemView)
def kernel(system: SystemView) -> str:
    return system.kernel_release or "?"


@needs(SystemView)
def glibc(system: SystemView) -> str:
    return system.glibc or NONE


@needs(TargetView)
def python_minor(target: TargetView) -> str:
    return target.python_minor or "?"


def variant_of(build: Mapping[str, Any]) -> str:
    """ "cu130", "rocm6.2" or "cpu": the build variant, as pip index URLs spell it."""
    if build.get("cuda"):
        return "cu" + str(build["cuda"]).replace(".", "")
    if build.get("hip"):
        return "rocm" + ".".join(str(build["hip"]).split(".")[:2])
    return "cpu"


@needs(TargetView)
def torch(target: TargetView) -> str:
    """ "2.13.0 (cu130)": the release and the build variant, which decides driver and GPU needs."""
    build = target.torch_facts
    if not build.get("version"):
        return NOT_INSTALLED
    return f"{str(build['version']).split('+', 1)[0]} ({variant_of(build)})"


@needs(GpuView)
def driver(gpu: GpuView) -> str:
    if not gpu.driver_version:
        return NONE
    return f"{gpu.driver_version} (CUDA {gpu.driver_cuda or '?'})"


def distribution_versions(target: TargetView) -> dict:
    return {name: dist.get("version", "") for name, dist in target.distributions.items()}


@needs(TargetView)
def wheel_families(target: TargetView) -> str:
    return "+".join(sorted(target.families)) or NONE


@needs(TargetView)
def numpy_major(target: TargetView) -> str:
    version = target.version_of("numpy")
    return version.split(".", 1)[0] if version else NOT_INSTALLED


def package(name: str) -> Callable[[RawFacts], Value]:
    @needs(TargetView)
    def version(target: TargetView) -> str:
        return target.version_of(normalize(name)) or NOT_INSTALLED

    return version


@needs(CpuView)
def instruction_sets(cpu: CpuView) -> str:
    return " ".join(flag for flag in INSTRUCTION_SETS if flag in cpu.flags) or NONE


def flags_of(value: str) -> Tuple[str, ...]:
    return () if value == NONE else tuple(value.split())


@needs(CpuView, EnvironView)
def torch_cpu_capability(cpu: CpuView, environ: EnvironView) -> str:
    """The kernels ATen dispatches to: ATEN_CPU_CAPABILITY if set, else what the flags allow."""
    forced = environ.variables.get("ATEN_CPU_CAPABILITY")
    if forced:
        return f"{forced.upper()} (ATEN_CPU_CAPABILITY)"
    if "sse2" not in cpu.flags:
        return "not x86"
    if cpu.torch_avx512:
        return "AVX512"
    return "AVX2" if cpu.torch_avx2 else "DEFAULT"


def variable(name: str) -> Callable[[RawFacts], Value]:
    @needs(EnvironView)
    def value(environ: EnvironView) -> str:
        return environ.variables.get(name, UNSET)

    return value


@needs(GpuView)
def gpu_architecture(gpu: GpuView) -> str:
    capabilities = sorted({str(g.get("compute_capability")) for g in gpu.recorded_gpus if g.get("compute_capability")})
    return ", ".join(capabilities) or NO_GPU


@needs(GpuView)
def gpu_models(gpu: GpuView) -> str:
    names = [g.get("name") or "?" for g in gpu.recorded_gpus]
    return ", ".join(f"{names.count(n)} × {n}" for n in sorted(set(names))) or NO_GPU
