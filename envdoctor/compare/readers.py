"""Readers: one comparable value per aspect of a report's facts, as the text a user reads.

Reports differ in what they record (an older envdoctor, a collector that failed with `{"error": ...}`),
so a reader answers `Unrecorded(reason)` instead of guessing, and the aspect is shown as not compared.
Absence that is itself a fact ("torch not installed", "no GPU") is a value like any other.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Tuple, Union

from envdoctor.checks.cpu import TORCH_AVX2
from envdoctor.checks.facts import normalize
from envdoctor.checks.wsl import wsl_kind
from envdoctor.knowledge.wheels import cuda_family

NOT_INSTALLED = "not installed"
UNSET = "unset"
NO_GPU = "no GPU"
NONE = "none"
TORCH_AVX512 = ("avx512f", "avx512vl", "avx512bw", "avx512dq", "fma")
# The instruction sets that decide which kernels a wheel may run (x86 and ARM spellings of /proc/cpuinfo).
INSTRUCTION_SETS = (
    "sse4_1", "sse4_2", "popcnt", "avx", "avx2", "fma", "f16c", "bmi2",
    "avx512f", "avx512vl", "avx512bw", "avx512dq", "avx512_vnni", "avx512_bf16", "amx_tile",
    "asimd", "sve", "sve2",
)


@dataclass(frozen=True)
class Unrecorded:
    """The report does not record what an aspect needs; `reason` says what is missing."""

    reason: str


Value = Union[str, Unrecorded]
Facts = Mapping[str, Any]
# What reading a recorded report's facts of the wrong shape raises (a number where text is expected, ...).
UNUSABLE = (TypeError, KeyError, ValueError, AttributeError, IndexError)


def unusable(what: str, error: Exception) -> Unrecorded:
    return Unrecorded(f"{what} of an unexpected shape in the report ({type(error).__name__})")


def section(facts: Facts, name: str) -> Union[Mapping[str, Any], Unrecorded]:
    found = facts.get(name)
    if not isinstance(found, Mapping):
        return Unrecorded(f"no {name} facts in the report")
    if "error" in found:
        return Unrecorded(f"{name} facts failed: {found['error']}")
    return found


def needs(*names: str):
    """Give a reader the named fact sections, or answer Unrecorded when one is missing, failed, or
    holds something of the wrong shape where the reader looks."""

    def wrap(read: Callable[..., str]) -> Callable[[Facts], Value]:
        @functools.wraps(read)
        def reader(facts: Facts) -> Value:
            sections = [section(facts, name) for name in names]
            missing = [s for s in sections if isinstance(s, Unrecorded)]
            if missing:
                return missing[0]
            what = " and ".join(names) + " facts"
            try:
                value = read(*sections)
            except UNUSABLE as error:
                return unusable(what, error)
            return value if isinstance(value, str) else unusable(what, TypeError())

        return reader

    return wrap


@needs("system")
def platform(system) -> str:
    return f"{system.get('os') or '?'} {system.get('machine') or '?'}"


@needs("system")
def wsl(system) -> str:
    kind = wsl_kind(system)
    return kind.upper() if kind else "no"


@needs("system")
def kernel(system) -> str:
    return system.get("kernel_release") or "?"


@needs("system")
def glibc(system) -> str:
    return system.get("glibc") or NONE


@needs("target")
def python_minor(target) -> str:
    info = target.get("python", {}).get("version_info") or []
    return ".".join(str(part) for part in info[:2]) or "?"


def torch_build(target) -> Mapping[str, Any]:
    return target.get("torch_build") or {}


def variant_of(build: Mapping[str, Any]) -> str:
    """ "cu130", "rocm6.2" or "cpu": the build variant, as pip index URLs spell it."""
    if build.get("cuda"):
        return "cu" + str(build["cuda"]).replace(".", "")
    if build.get("hip"):
        return "rocm" + ".".join(str(build["hip"]).split(".")[:2])
    return "cpu"


@needs("target")
def torch(target) -> str:
    """ "2.13.0 (cu130)": the release and the build variant, which decides driver and GPU needs."""
    build = torch_build(target)
    if not build.get("version"):
        return NOT_INSTALLED
    return f"{build['version'].split('+', 1)[0]} ({variant_of(build)})"


@needs("gpu")
def driver(gpu) -> str:
    found = gpu.get("driver") or {}
    if not found.get("version"):
        return NONE
    return f"{found['version']} (CUDA {found.get('cuda') or '?'})"


def distribution_versions(target) -> dict:
    return {normalize(d["name"]): d.get("version", "") for d in target.get("distributions", ())}


@needs("target")
def wheel_families(target) -> str:
    families = {cuda_family(d["name"], d.get("version")) for d in target.get("distributions", ())}
    return "+".join(sorted(f for f in families if f)) or NONE


@needs("target")
def numpy_major(target) -> str:
    version = distribution_versions(target).get("numpy")
    return version.split(".", 1)[0] if version else NOT_INSTALLED


def package(name: str) -> Callable[[Facts], Value]:
    @needs("target")
    def version(target) -> str:
        return distribution_versions(target).get(normalize(name)) or NOT_INSTALLED

    return version


@needs("cpu")
def instruction_sets(cpu) -> str:
    flags = set(cpu.get("flags", ()))
    return " ".join(flag for flag in INSTRUCTION_SETS if flag in flags) or NONE


def flags_of(value: str) -> Tuple[str, ...]:
    return () if value == NONE else tuple(value.split())


@needs("cpu", "environ")
def torch_cpu_capability(cpu, environ) -> str:
    """The kernels ATen dispatches to: ATEN_CPU_CAPABILITY if set, else what the flags allow."""
    forced = environ.get("variables", {}).get("ATEN_CPU_CAPABILITY")
    if forced:
        return f"{forced.upper()} (ATEN_CPU_CAPABILITY)"
    flags = set(cpu.get("flags", ()))
    if "sse2" not in flags:
        return "not x86"
    if all(flag in flags for flag in TORCH_AVX512):
        return "AVX512"
    return "AVX2" if all(flag in flags for flag in TORCH_AVX2) else "DEFAULT"


def variable(name: str) -> Callable[[Facts], Value]:
    @needs("environ")
    def value(environ) -> str:
        return environ.get("variables", {}).get(name, UNSET)

    return value


def gpus(gpu) -> list:
    return list(gpu.get("gpus") or ())


@needs("gpu")
def gpu_architecture(gpu) -> str:
    capabilities = sorted({str(g.get("compute_capability")) for g in gpus(gpu) if g.get("compute_capability")})
    return ", ".join(capabilities) or NO_GPU


@needs("gpu")
def gpu_models(gpu) -> str:
    names = [g.get("name") or "?" for g in gpus(gpu)]
    return ", ".join(f"{names.count(n)} × {n}" for n in sorted(set(names))) or NO_GPU
