"""Which GPU compute capabilities each torch CUDA variant has kernels for (arches.csv).

A cubin built for sm_X.Y runs on any GPU of compute capability X.Y <= cc < (X+1).0; PTX for
compute_X.Y is JIT-compiled by the driver for any newer GPU (torch 2.13 torch/cuda/__init__.py
DEVICE_REQUIREMENT; NVIDIA CUDA compatibility guide). Without either the GPU fails with
"no kernel image is available for execution on the device".

The Tegra iGPUs (Jetson TX1 5.3, TX2 6.2, Xavier 7.2, Orin 8.7, Thor 10.1, called 11.0 from CUDA 13)
are the exception torch's DEVICE_REQUIREMENT spells out: they run only cubins built for themselves, and
no dGPU cubin of their major runs there (an Orin is not served by sm_80 or sm_86). The arch lists differ
by host platform too: aarch64 wheels (Grace, Thor) are built for other capabilities than x86_64 ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Optional, Tuple

from envdoctor.knowledge import minor_of, rows, version_tuple, words

SASS = "sass"
PTX = "ptx"
X86_64 = "x86_64"
AARCH64 = "aarch64"
# Tegra iGPU capability -> the GPUs its cubins run on (Thor's sm_101 is called sm_110 from CUDA 13, whose cubins it runs too)
IGPU_ONLY = {"5.3": ("5.3",), "6.2": ("6.2",), "7.2": ("7.2",), "8.7": ("8.7",), "10.1": ("10.1", "11.0")}
ARCH_FLAG = re.compile(r"(sm|compute)_(\d+)(\d)[a-z]?$")


@dataclass(frozen=True)
class ArchList:
    """The kernels one CUDA variant ships across a range of torch minors."""

    variant: str
    platform: str
    torch_from: str
    torch_to: str
    sass: Tuple[str, ...]
    ptx: Tuple[str, ...]
    source: str

    def covers(self, torch_version: str) -> bool:
        return version_tuple(self.torch_from) <= version_tuple(minor_of(torch_version)) <= version_tuple(self.torch_to)

    def support(self, capability: str) -> Optional[str]:
        """"sass" when a cubin runs on `capability`, "ptx" when only JIT from PTX does, else None."""
        cc = version_tuple(capability)
        if any(cubin_runs(s, capability) for s in self.sass):
            return SASS
        if any(version_tuple(p) <= cc for p in self.ptx):
            return PTX
        return None

    @property
    def kernels(self) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
        """(cubins, PTX): what two arch lists must share to say the same thing."""
        return self.sass, self.ptx

    def flags(self) -> Tuple[str, ...]:
        """ ("sm_75", ..., "sm_120", "compute_120"): the form torch.cuda.get_arch_list() returns."""
        return tuple(f"sm_{c.replace('.', '')}" for c in self.sass) + tuple(f"compute_{c.replace('.', '')}" for c in self.ptx)

    def describe(self) -> str:
        return ", ".join(self.flags()) or "none"


def cubin_runs(cubin: str, capability: str) -> bool:
    """Whether an sm_`cubin` kernel runs on a GPU of `capability` (torch 2.13 DEVICE_REQUIREMENT): same
    major, not older, and never across the line between Tegra iGPUs and discrete GPUs."""
    if cubin in IGPU_ONLY:
        return capability in IGPU_ONLY[cubin]
    if capability in IGPU_ONLY:
        return False
    have, built = version_tuple(capability), version_tuple(cubin)
    return bool(have) and have[0] == built[0] and built <= have


def platform_of(machine: str) -> str:
    """The wheel platform of a host machine name ("aarch64", "arm64" -> aarch64; anything else x86_64),
    as torch's own _host_arch_key() chooses its table."""
    return AARCH64 if str(machine).lower() in ("aarch64", "arm64") else X86_64


def capabilities(flags: Iterable[str], kind: str) -> Tuple[str, ...]:
    """ "sm_120", "sm_90a" -> "12.0", "9.0" for the flags of `kind` ("sm" or "compute"), lowest first, each once."""
    found = {f"{m.group(2)}.{m.group(3)}" for m in (ARCH_FLAG.match(str(f)) for f in flags) if m and m.group(1) == kind}
    return tuple(sorted(found, key=version_tuple))


def from_arch_flags(flags: Iterable[str], variant: str, torch_version: str, source: str, platform: str = X86_64) -> ArchList:
    """The arch list torch itself reported (torch.cuda.get_arch_list(): "sm_75", ..., "compute_120"), or
    one read from its libraries' fatbins in the same form."""
    flags = tuple(flags)
    minor = minor_of(torch_version)
    return ArchList(variant, platform, minor, minor, capabilities(flags, "sm"), capabilities(flags, "compute"), source)


def arch_lists() -> Tuple[ArchList, ...]:
    return tuple(
        ArchList(row["variant"], row["platform"], row["torch_from"], row["torch_to"], words(row["sass"]), words(row["ptx"]), row["source"])
        for row in rows("arches.csv")
    )


def arch_list(cuda_variant: str, torch_version: Optional[str] = None, platform: str = X86_64) -> Optional[ArchList]:
    """The arch list of `cuda_variant` ("cu126") for `torch_version` on `platform`, or its newest when no
    version is given."""
    matching = [
        a for a in arch_lists()
        if a.variant == cuda_variant and a.platform == platform and (torch_version is None or a.covers(torch_version))
    ]
    return max(matching, key=lambda a: version_tuple(a.torch_to), default=None)


def supported_capabilities(cuda_variant: str, torch_version: Optional[str] = None, platform: str = X86_64) -> Tuple[str, ...]:
    """The compute capabilities the variant ships cubins (SASS) for, e.g. "cu126" -> ("5.0", ..., "9.0")."""
    found = arch_list(cuda_variant, torch_version, platform)
    return found.sass if found else ()


def support(capability: str, cuda_variant: str, torch_version: Optional[str] = None, platform: str = X86_64) -> Optional[str]:
    """How a GPU of `capability` runs a torch of this variant: "sass", "ptx", or None (no kernels);
    None as well when the variant is unknown, so callers check `arch_list` first."""
    found = arch_list(cuda_variant, torch_version, platform)
    return found.support(capability) if found else None


def variants_supporting(capability: str, torch_version: Optional[str] = None, platform: str = X86_64) -> Tuple[str, ...]:
    """The CUDA variants with cubins for `capability` (for `torch_version` when given) on `platform`, oldest CUDA first."""
    found = {
        a.variant for a in arch_lists()
        if a.platform == platform and (torch_version is None or a.covers(torch_version)) and a.support(capability) == SASS
    }
    return tuple(sorted(found, key=lambda v: int(v[2:])))
