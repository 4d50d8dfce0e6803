"""The JSON report: the versioned document to attach to a bug ticket.

A floor below the renderers and the store, since both write it: a command encodes (and redacts) its
report once, and the saved file and `--json` write that one text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Mapping

from envdoctor import codec
from envdoctor.model import Report


@dataclass(frozen=True)
class Document:
    """A finished report as it leaves the doctor: the views draw `report`, the store and `--json` write
    `text`, and both come from the one JSON `data`, so everything that leaves shows the same values."""

    report: Report
    data: Mapping[str, Any]

    @classmethod
    def of(cls, report: Report) -> "Document":
        """The document of a report with nothing left to redact (a recorded one, judged again)."""
        return cls(report, codec.encode(report))

    @cached_property
    def text(self) -> str:
        return json.dumps(self.data, indent=2) + "\n"
