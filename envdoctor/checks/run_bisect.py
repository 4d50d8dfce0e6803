"""The bisection of a failed command (`envdoctor run --bisect`): the one setting that makes it go away.

Pure: judged from `run["bisection"]` as recorded (capture/bisect.py), worded like the probe's
bisection. A variation that passed, or that survived past twice the time the failure took, names
the setting to keep; when none did, the cause is not in those settings, save those the command set
again where no start-up hook can reach (not_applied says which, and why).
"""

from __future__ import annotations

from typing import Any, Iterable, List, Mapping

from envdoctor.checks import check
from envdoctor.checks.probe import bisection_finding
from envdoctor.facts import view_of
from envdoctor.facts.run import RunView
from envdoctor.model import Finding
from envdoctor.probe.variations import BY_NAME

GOES_AWAY = ("passes", "survives")


def variations_of(bisection: Mapping[str, Any]) -> List[Mapping[str, Any]]:
    """The recorded variations that have a name, a command and an outcome."""
    found = bisection.get("variations") if isinstance(bisection.get("variations"), list) else []
    return [v for v in found if isinstance(v, Mapping) and all(isinstance(v.get(key), str) for key in ("name", "command", "outcome"))]


def meaning(variation: Mapping[str, Any]) -> str:
    """What the setting rules in when it makes the failure go away (its ending for names unknown here)."""
    known = BY_NAME.get(variation["name"])
    if known:
        return known.meaning
    return f"{variation['name']}: {variation.get('ending')}."


@check("run.bisected", "Which single environment change makes the command's failure go away", requires=("run",))
def bisected(facts: Mapping[str, Any]) -> Iterable[Finding]:
    bisection = view_of(facts, RunView).record.get("bisection")
    if not isinstance(bisection, Mapping):
        return
    variations = variations_of(bisection)
    passing = [v for v in variations if v["outcome"] in GOES_AWAY]
    evidence = {
        "passing": [v["name"] for v in passing],
        "tried": {v["name"]: v["outcome"] for v in variations},
        "commands": [v["command"] for v in passing],
        "not_applied": {v["name"]: v.get("applied") for v in variations if v["outcome"] == "not-applied"},
    }
    failure = bisection.get("failure") if isinstance(bisection.get("failure"), str) else "as recorded"
    yield bisection_finding("run.bisected", failure, [(v["command"], meaning(v)) for v in passing], evidence)
