"""The probe ladder's recorded result as a view: probe/result.ProbeResult, read through its own from_json."""

from __future__ import annotations

from typing import Any, Mapping, Union

from envdoctor.facts import Unrecorded, shaped
from envdoctor.probe.result import ProbeResult


class Probe:
    """Reads the probe section into a ProbeResult (the probe's own type is the view)."""

    SECTION = "probe"

    @staticmethod
    def from_json(section: Mapping[str, Any]) -> Union[ProbeResult, Unrecorded]:
        return shaped(Probe.SECTION, lambda: ProbeResult.from_json(section))
