"""The GPU view (collect/gpu.py): the NVIDIA driver and the GPUs NVML or nvidia-smi reported."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple, Union

from envdoctor.facts import Unrecorded, expect, field, shaped

NO_SOURCE = (None, "none")


def gpu_entry(entry: Any) -> Mapping[str, Any]:
    expect(entry, Mapping)
    expect(entry.get("compute_capability"), (str, type(None)))
    expect(entry.get("name"), (str, type(None)))
    return entry


@dataclass(frozen=True)
class GpuView:
    """The gpu section, its shapes checked: every GPU a mapping; the driver, which policies read on
    their own, is checked when it is read."""

    SECTION = "gpu"
    source: Optional[str] = None
    driver_facts: Any = None
    recorded_gpus: Tuple[Mapping[str, Any], ...] = ()
    reason: Optional[str] = None

    @classmethod
    def from_json(cls, section: Mapping[str, Any]) -> Union["GpuView", Unrecorded]:
        return shaped(cls.SECTION, lambda: cls(
            source=expect(section.get("source"), (str, type(None))),
            driver_facts=section.get("driver"),
            recorded_gpus=tuple(gpu_entry(g) for g in expect(section.get("gpus"), list, [])),
            reason=expect(section.get("reason"), (str, type(None))),
        ))

    @property
    def gpus(self) -> Tuple[Mapping[str, Any], ...]:
        """The GPUs NVML or nvidia-smi reported; none where no driver answered, so no GPU check fires on a CPU box."""
        return self.recorded_gpus if self.source not in NO_SOURCE else ()

    @property
    def driver(self) -> Mapping[str, Any]:
        return field(self.SECTION, self.driver_facts, Mapping, {})

    @property
    def driver_version(self) -> Optional[str]:
        return self.driver.get("version")

    @property
    def driver_cuda(self) -> Optional[str]:
        """The newest CUDA the driver supports, as it reports it."""
        return self.driver.get("cuda")
