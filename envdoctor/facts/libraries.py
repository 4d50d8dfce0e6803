"""The shared-library view (collect/libraries.py): CUDA libraries the loader may find outside the wheels, and nvcc."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Tuple, Union

from envdoctor.facts import Unrecorded, expect, shaped


def entries(value: Any) -> Tuple[Mapping[str, Any], ...]:
    return tuple(expect(entry, Mapping) for entry in expect(value, list, []))


@dataclass(frozen=True)
class LibrariesView:
    """The libraries section: each way of finding a library a tuple of entries (library, major, version, path, via)."""

    SECTION = "libraries"
    ld_preload: Tuple[Mapping[str, Any], ...] = ()
    ld_library_path: Tuple[Mapping[str, Any], ...] = ()
    ldconfig: Tuple[Mapping[str, Any], ...] = ()
    nvcc: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, section: Mapping[str, Any]) -> Union["LibrariesView", Unrecorded]:
        return shaped(cls.SECTION, lambda: cls(
            ld_preload=entries(section.get("ld_preload")),
            ld_library_path=entries(section.get("ld_library_path")),
            ldconfig=entries(section.get("ldconfig")),
            nvcc=expect(section.get("nvcc"), Mapping, {}),
        ))

    @property
    def found(self) -> Tuple[Mapping[str, Any], ...]:
        """Every entry, in the loader's order of precedence."""
        return self.ld_preload + self.ld_library_path + self.ldconfig
