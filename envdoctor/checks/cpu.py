"""CPU checks: instruction sets the installed wheels assume.

Facts: docs/knowledge/domain-facts.md §6. torch picks AVX2 kernels when avx2+fma are present and AVX-512 ones when
avx512f/vl/bw/dq are (ATen DispatchStub.cpp); official x86 wheels SIGILL on CPUs without AVX
(pytorch#37577); NumPy >= 2.4 requires x86-64-v2 (NumPy 2.4.0 release notes).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from packaging.version import Version

from envdoctor.checks import check
from envdoctor.facts import view_of
from envdoctor.facts.cpu import TORCH_AVX2, CpuView
from envdoctor.facts.target import TargetView
from envdoctor.model import Finding, Remedy, Severity

# /proc/cpuinfo spells SSE3 "pni" and LAHF/SAHF "lahf_lm".
X86_64_V2 = ("pni", "ssse3", "sse4_1", "sse4_2", "popcnt", "cx16", "lahf_lm")
NUMPY_V2_BASELINE = Version("2.4")


def numpy_baseline_finding(facts: Mapping[str, Any], cpu, numpy_version, lacking) -> Finding:
    return Finding(
        id="cpu.missing-instructions",
        severity=Severity.ERROR,
        title=f"NumPy {numpy_version} needs an x86-64-v2 CPU; this one lacks {', '.join(lacking)}",
        explanation=(
            "NumPy 2.4 raised its x86 baseline to x86-64-v2; importing it fails with \"NumPy was built with "
            "baseline optimizations: (X86_V2) but your machine doesn't support: (X86_V2)\". Virtual machines "
            "with a kvm64/qemu64 CPU model are the usual cause."
        ),
        evidence={"cpu_model": cpu.model, "missing_flags": lacking, "numpy": str(numpy_version)},
        remedies=(
            Remedy("Install a NumPy built for older CPUs:", view_of(facts, TargetView).installer_command("install", ["numpy<2.4"])),
            Remedy("or give the virtual machine the host's CPU model (e.g. `-cpu host` or x86-64-v2 or newer)."),
        ),
        references=("https://numpy.org/doc/stable/release/2.4.0-notes.html",),
    )


def torch_avx_finding(cpu, lacking, severity) -> Finding:
    without_avx = severity is Severity.ERROR
    return Finding(
        id="cpu.missing-instructions",
        severity=severity,
        title=(
            "This CPU has no AVX: official torch wheels can die with SIGILL (illegal instruction)"
            if without_avx
            else f"This CPU lacks {', '.join(lacking)}: torch runs its slow default kernels"
        ),
        explanation=(
            "torch selects AVX2 kernels only with avx2+fma; without them it falls back to its DEFAULT "
            "kernels. Parts of the official x86 wheels (oneDNN, fbgemm) assume at least AVX."
        ),
        evidence={"cpu_model": cpu.model, "missing_flags": lacking},
        remedies=(
            Remedy("Confirm the crash disappears with the baseline kernels:", "ATEN_CPU_CAPABILITY=default python train.py"),
            Remedy("On a virtual machine, expose the host CPU's instruction sets (e.g. `-cpu host`)."),
        ),
        references=("https://github.com/pytorch/pytorch/issues/37577",),
    )


@check("cpu.missing-instructions", "CPU instructions the installed NumPy and torch wheels assume", requires=("cpu",))
def missing_instructions(facts: Mapping[str, Any]) -> Iterable[Finding]:
    cpu = view_of(facts, CpuView)
    if not cpu.is_x86 or not cpu.flags:
        return
    numpy_version = view_of(facts, TargetView).installed_version("numpy")
    lacking_v2 = cpu.missing(X86_64_V2)
    if numpy_version and numpy_version >= NUMPY_V2_BASELINE and lacking_v2:
        yield numpy_baseline_finding(facts, cpu, numpy_version, lacking_v2)
    if view_of(facts, TargetView).installed_version("torch"):
        if "avx" not in cpu.flags:
            yield torch_avx_finding(cpu, ["avx", *cpu.missing(TORCH_AVX2)], Severity.ERROR)
        elif cpu.missing(TORCH_AVX2):
            yield torch_avx_finding(cpu, cpu.missing(TORCH_AVX2), Severity.WARNING)
