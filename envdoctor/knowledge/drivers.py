"""CUDA toolkit -> the least NVIDIA driver that runs it (drivers.csv).

A cuXY pip wheel needs either the driver shipped with toolkit X.Y or, from CUDA 11 on, only the
family's minor-version-compatibility floor (NVIDIA CUDA Compatibility doc). Code that must be
JIT-compiled from PTX is the exception: it needs the toolkit's own driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

from envdoctor.knowledge import minor_of, optional, rows, version_tuple

DRIVER_DOWNLOAD = "https://www.nvidia.com/Download/index.aspx"  # where every driver remedy sends the user


@dataclass(frozen=True)
class DriverRequirement:
    """The drivers one CUDA x.y needs on Linux and Windows."""

    cuda: str
    toolkit_linux: str
    toolkit_windows: Optional[str]
    minor_compat_linux: Optional[str]
    minor_compat_windows: Optional[str]
    source: str

    def toolkit(self, os: str = "linux") -> Optional[str]:
        return self.toolkit_linux if os == "linux" else self.toolkit_windows

    def minor_compat(self, os: str = "linux") -> Optional[str]:
        return self.minor_compat_linux if os == "linux" else self.minor_compat_windows


def table() -> Dict[str, DriverRequirement]:
    return {
        row["cuda"]: DriverRequirement(
            cuda=row["cuda"],
            toolkit_linux=row["toolkit_linux"],
            toolkit_windows=optional(row["toolkit_windows"]),
            minor_compat_linux=optional(row["minor_compat_linux"]),
            minor_compat_windows=optional(row["minor_compat_windows"]),
            source=row["source"],
        )
        for row in rows("drivers.csv")
    }


def requirement(cuda: str) -> Optional[DriverRequirement]:
    """The row for CUDA "12.1" (a longer version such as "12.1.105" is cut to x.y); None when unknown."""
    return table().get(minor_of(cuda))


def minimum_driver(cuda: str, os: str = "linux") -> Optional[str]:
    """The least driver that runs a cuXY pip wheel: the lower of the toolkit's driver and the
    minor-compatibility floor (CUDA 11.0's own driver predates its family floor)."""
    row = requirement(cuda)
    if row is None:
        return None
    candidates = [v for v in (row.toolkit(os), row.minor_compat(os)) if v]
    return min(candidates, key=version_tuple) if candidates else None


def driver_satisfies(driver: str, cuda: str, os: str = "linux") -> bool:
    """Whether driver `driver` runs CUDA `cuda`; an unknown CUDA or driver is given the benefit of the doubt."""
    least = minimum_driver(cuda, os)
    if least is None or not version_tuple(driver):
        return True
    return version_tuple(driver) >= version_tuple(least)
