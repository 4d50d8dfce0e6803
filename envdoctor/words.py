"""Sizes and counts in the words every finding and view uses, so "2.0 GiB" and "3 processes" read the
same in a check's title, a run's summary and a fleet's table. Plain text only: checks use it too."""

from __future__ import annotations

from typing import Any, Optional

GIB = 2 ** 30
MIB = 2 ** 20


def gib(n_bytes: Any, unknown: Optional[str] = "?") -> Optional[str]:
    """ "1.5 GiB"; `unknown` where a recorded report holds no number."""
    return f"{n_bytes / GIB:.1f} GiB" if isinstance(n_bytes, (int, float)) else unknown


def mib(n_bytes: Any, unknown: Optional[str] = "?") -> Optional[str]:
    """ "512 MiB"; `unknown` where a recorded report holds no number."""
    return f"{n_bytes / MIB:.0f} MiB" if isinstance(n_bytes, (int, float)) else unknown


def plural(count: int, noun: str) -> str:
    """ "1 node", "3 nodes", "2 processes"."""
    return f"{count} {noun}" + ("" if count == 1 else "es" if noun.endswith("s") else "s")
