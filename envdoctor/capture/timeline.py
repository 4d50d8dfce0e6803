"""A bounded memory timeline whose peaks survive however long the run lasts.

Training runs last days; samples arrive every fraction of a second. When the timeline is full, its
older half is merged pairwise keeping each field's maximum, so memory stays bounded, the last
moments before a death keep full resolution, and no peak is ever averaged away.
"""

from __future__ import annotations

from typing import List, Mapping, Optional

DEFAULT_CAPACITY = 1000


def merged(older: Mapping, newer: Mapping) -> dict:
    """One sample standing for two: the later time, each value's maximum (lists element-wise)."""
    out = dict(newer)
    for key, value in older.items():
        if key == "t":
            continue
        other = newer.get(key)
        if isinstance(value, list) and isinstance(other, list) and len(value) == len(other):
            out[key] = [max(a, b) for a, b in zip(value, other)]
        elif isinstance(value, (int, float)) and isinstance(other, (int, float)):
            out[key] = max(value, other)
    return out


class Timeline:
    """Samples (dicts with a time `t` in seconds since the start), oldest first."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        self.capacity = capacity
        self.samples: List[dict] = []

    def add(self, sample: dict) -> None:
        self.samples.append(sample)
        if len(self.samples) > self.capacity:
            half = self.capacity // 2
            old = self.samples[:half]
            pairs = [merged(old[i], old[i + 1]) if i + 1 < len(old) else old[i] for i in range(0, len(old), 2)]
            self.samples = pairs + self.samples[half:]

    def peak(self, key: str) -> Optional[dict]:
        """The sample where `key` was highest (None before any sample has it)."""
        having = [s for s in self.samples if s.get(key) is not None]
        return max(having, key=lambda s: s[key]) if having else None

    def last(self) -> Optional[dict]:
        return self.samples[-1] if self.samples else None
