"""The probe ladder's recorded result as a view: probe/result.ProbeResult, read by the report's codec."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Union

from envdoctor import codec
from envdoctor.facts import RawFacts, Unrecorded, UnusableFacts, read, shaped
from envdoctor.probe.result import ProbeResult


class Probe:
    """Reads the probe section into a ProbeResult (the probe's own type is the view)."""

    SECTION = "probe"

    @staticmethod
    def from_json(section: Mapping[str, Any]) -> Union[ProbeResult, Unrecorded]:
        if not section:
            return Unrecorded("no probe facts in the report", Probe.SECTION)
        return shaped(Probe.SECTION, lambda: codec.decode(ProbeResult, section))


def probe_of(facts: RawFacts) -> Optional[ProbeResult]:
    """The recorded probe, or None where none ran; a probe of the wrong shape raises UnusableFacts,
    which the runner shows as the check's crash."""
    found = read(facts, Probe)
    if not isinstance(found, Unrecorded):
        return found
    if found.shape:
        raise UnusableFacts(found)
    return None


def openmp_runtimes(facts: RawFacts) -> List[Mapping[str, Any]]:
    """The OpenMP runtimes the probe's thread-pool stage saw loaded (threadpoolctl's entries); none
    where no probe ran or the stage did not."""
    probe = probe_of(facts)
    stage = probe.stage("thread_pools") if probe else None
    return list((stage.details.get("openmp_runtimes") if stage else None) or [])
