"""The view of one run of the user's command (`envdoctor run`, recorded by capture/record.py).

The record is deep and read as it is by the readers beside this view (facts/run_describe.py,
facts/run_growth.py, and the stacks in crash/), so the view checks the parts every verdict reads
(how it ended, the command, its duration) and hands the record on whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Mapping, Optional, Tuple, Union

from envdoctor.facts import Unrecorded, expect, shaped

# What the audit hook says of a module that hid another of its name (target/audit.py: shadowing).
SHADOWING_KEYS = ("module", "file", "hides")


@dataclass(frozen=True)
class RunView:
    """The run section: `ending` with its kind ("signal", "exit", "hang", ...), the command, its duration."""

    SECTION = "run"
    ending: Mapping[str, Any] = field(default_factory=dict)
    command: Tuple[str, ...] = ()
    duration_s: float = 0.0
    record: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, section: Mapping[str, Any]) -> Union["RunView", Unrecorded]:
        return shaped(cls.SECTION, lambda: cls(
            ending=ending_of(section.get("ending")),
            command=tuple(expect(part, str) for part in expect(section.get("command"), list, [])),
            duration_s=float(expect(section.get("duration_s"), (int, float), 0.0)),
            record=section,
        ))

    @property
    def ending_kind(self) -> str:
        return self.ending.get("kind", "")

    def shadowing(self) -> Optional[Mapping[str, str]]:
        """The module file that hid another of its name in the process that died of the exception, as
        the audit hook recorded it; None unless each of its parts is recorded as text."""
        raised = self.record.get("exception")
        shadow = raised.get("shadowing") if isinstance(raised, Mapping) else None
        return shadow if isinstance(shadow, Mapping) and all(isinstance(shadow.get(key), str) for key in SHADOWING_KEYS) else None

    def output_lines(self, stream: Optional[str] = None) -> List[str]:
        """The command's last lines of output, of one stream ("stdout", "stderr") or of both."""
        return [line["text"] for line in self.record.get("output_tail", ()) if stream is None or line["stream"] == stream]


def ending_of(value: Any) -> Mapping[str, Any]:
    ending = expect(value, Mapping, {})
    expect(ending.get("kind"), str, "")
    return ending
