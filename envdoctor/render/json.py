"""The JSON report: the versioned document to attach to a bug ticket."""

from __future__ import annotations

import json

from envdoctor.model import Report


def render(report: Report) -> str:
    return json.dumps(report.to_json(), indent=2, sort_keys=False) + "\n"
