"""The environment-variable view (collect/environ.py), and the thread-pool variables among them
(docs/knowledge/domain-facts.md §7: SB3 docs on OMP_NUM_THREADS; OpenBLAS's NUM_THREADS cap)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Union

from envdoctor.facts import Unrecorded, expect, shaped

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMEXPR_MAX_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "GOTO_NUM_THREADS",
    "BLIS_NUM_THREADS",
)


def thread_count(value: str) -> Optional[int]:
    """The outermost thread count of a variable ("8" or OpenMP's nested "8,2"), None if unreadable."""
    first = value.split(",")[0].strip()
    return int(first) if first.isdigit() else None


def text_values(value: Any) -> Mapping[str, str]:
    found = expect(value, Mapping, {})
    for name, text in found.items():
        expect(name, str)
        expect(text, str)
    return found


@dataclass(frozen=True)
class EnvironView:
    """The environ section: the recorded variables, names and values all text."""

    SECTION = "environ"
    variables: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, section: Mapping[str, Any]) -> Union["EnvironView", Unrecorded]:
        return shaped(cls.SECTION, lambda: cls(variables=text_values(section.get("variables"))))

    @property
    def thread_variables(self) -> Dict[str, str]:
        """The thread-pool variables that are set, in THREAD_VARIABLES order."""
        return {name: self.variables[name] for name in THREAD_VARIABLES if name in self.variables}
