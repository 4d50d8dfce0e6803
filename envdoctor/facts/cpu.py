"""The CPU's view (collect/cpu.py): its flags, the CPUs this process may use, and which torch kernels
those flags allow (ATen DispatchStub.cpp: AVX2 with avx2+fma, AVX-512 with avx512f/vl/bw/dq; docs/knowledge/domain-facts.md §6)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, List, Mapping, Optional, Tuple, Union

from envdoctor.facts import Unrecorded, expect, shaped, whole

TORCH_AVX2 = ("avx2", "fma")
TORCH_AVX512 = ("avx512f", "avx512vl", "avx512bw", "avx512dq", "fma")
X86_ARCHES = ("x86_64", "AMD64", "i686")


@dataclass(frozen=True)
class CpuView:
    """The cpu section, its shapes checked: flags are text, counts are whole numbers."""

    SECTION = "cpu"
    model: Optional[str] = None
    arch: Optional[str] = None
    flags: Tuple[str, ...] = ()
    usable_cpus: Optional[int] = None
    logical_cores: Optional[int] = None

    @classmethod
    def from_json(cls, section: Mapping[str, Any]) -> Union["CpuView", Unrecorded]:
        return shaped(cls.SECTION, lambda: cls(
            model=expect(section.get("model"), (str, type(None))),
            arch=expect(section.get("arch"), (str, type(None))),
            flags=tuple(expect(flag, str) for flag in expect(section.get("flags"), list, [])),
            usable_cpus=whole(section.get("usable_cpus")),
            logical_cores=whole(section.get("logical_cores")),
        ))

    @property
    def is_x86(self) -> bool:
        return self.arch in X86_ARCHES or "sse2" in self.flags

    def missing(self, wanted: Iterable[str]) -> List[str]:
        return [flag for flag in wanted if flag not in self.flags]

    @property
    def torch_avx2(self) -> bool:
        return not self.missing(TORCH_AVX2)

    @property
    def torch_avx512(self) -> bool:
        return not self.missing(TORCH_AVX512)
