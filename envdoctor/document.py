"""The JSON report: the versioned document to attach to a bug ticket.

A floor below the renderers and the store, since both write it: the JSON view prints it and `store`
saves it.
"""

from __future__ import annotations

import json

from envdoctor import codec
from envdoctor.model import Report


def render(report: Report) -> str:
    return json.dumps(codec.encode(report), indent=2, sort_keys=False) + "\n"
