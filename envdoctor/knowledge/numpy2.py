"""Which release of each compiled package was first built for NumPy 2 (numpy2.csv).

Extensions compiled against NumPy 1.x cannot be loaded by NumPy 2 ("A module that was compiled
using NumPy 1.x cannot be run in NumPy 2", "numpy.dtype size changed"), and most such releases say
nothing about it in their metadata. Wheels built against NumPy 2 are backward compatible: they load
under NumPy 1.x down to the C-API target of their build (NPY_FEATURE_VERSION in numpyconfig.h),
a floor each project states in its own numpy>= requirement. Some projects later require numpy>=2
outright; NumPy 2 exists only for Python 3.9 and newer, so that requirement binds only there
(numpy/numpy#26191).

torch itself was first built against NumPy 2 in release 2.3.0, so an older torch needs NumPy below 2
whatever its metadata says (docs/knowledge/domain-facts.md §8); 1.26.4 is the last NumPy 1 release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

from packaging.utils import canonicalize_name
from packaging.version import Version

from envdoctor.knowledge import optional, rows

FIRST_PYTHON_WITH_NUMPY_2 = Version("3.9")
FIRST_TORCH_FOR_NUMPY_2 = Version("2.3")
LAST_NUMPY_1 = "1.26.4"


def torch_needs_numpy_1(torch_version: str) -> bool:
    """True for a torch release built against NumPy 1.x ("1.13.1+cu116"), which NumPy 2 breaks."""
    return Version(Version(torch_version).base_version) < FIRST_TORCH_FOR_NUMPY_2


@dataclass(frozen=True)
class NumpyTwoRelease:
    """One project's first release built for NumPy 2 and, where known, its first requiring it."""

    project: str
    first_built: Version
    first_requiring: Optional[Version]
    source: str

    def built_for_numpy_1(self, version: Version) -> bool:
        """True when `version` predates the first release built for NumPy 2, so NumPy 2 cannot load it."""
        return version < self.first_built

    def requires_numpy_2(self, version: Version, python: Version) -> bool:
        """True when `version` requires NumPy 2 on this Python (NumPy 2 needs Python 3.9+)."""
        return self.first_requiring is not None and python >= FIRST_PYTHON_WITH_NUMPY_2 and version >= self.first_requiring


def table() -> Dict[str, NumpyTwoRelease]:
    """The releases by normalized project name."""
    found = {}
    for row in rows("numpy2.csv"):
        requiring = optional(row["requires_numpy2"])
        found[canonicalize_name(row["project"])] = NumpyTwoRelease(
            project=row["project"],
            first_built=Version(row["first_numpy2"]),
            first_requiring=Version(requiring) if requiring else None,
            source=row["source"],
        )
    return found
