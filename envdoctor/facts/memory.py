"""The memory view (collect/memory.py): RAM, swap and /dev/shm sizes in bytes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union

from envdoctor.facts import Unrecorded, expect, shaped, whole


@dataclass(frozen=True)
class MemoryView:
    """The memory section, each size a whole number of bytes or None where it was not read."""

    SECTION = "memory"
    ram_total_bytes: Optional[int] = None
    ram_available_bytes: Optional[int] = None
    swap_total_bytes: Optional[int] = None
    shm_total_bytes: Optional[int] = None
    shm_unreadable: Optional[str] = None  # why /dev/shm could not be measured on Linux: "No such file or directory"

    @classmethod
    def from_json(cls, section: Mapping[str, Any]) -> Union["MemoryView", Unrecorded]:
        return shaped(cls.SECTION, lambda: cls(
            ram_total_bytes=whole(section.get("ram_total_bytes")),
            ram_available_bytes=whole(section.get("ram_available_bytes")),
            swap_total_bytes=whole(section.get("swap_total_bytes")),
            shm_total_bytes=whole(section.get("shm_total_bytes")),
            shm_unreadable=expect(section.get("shm_unreadable"), (str, type(None))),
        ))
