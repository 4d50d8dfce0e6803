"""Comparing two reports: "it works on machine A, crashes on machine B".

Most bug tickets are a comparison between two environments. `compare` reads both reports' facts
through the same aspects (aspects.py), ranks what differs by how likely it is to break a run moved
from A to B, collapses the rest (rest.py), and lists the findings only one side has. Nothing here
prints; renderers are in compare/render.py.
"""

from __future__ import annotations

from typing import Tuple

from envdoctor.compare.aspects import ranked_differences
from envdoctor.compare.model import Comparison, Regraded, Side
from envdoctor.compare.rest import other_differences
from envdoctor.model import Finding, Report


def side(report: Report, name: str) -> Side:
    return Side(name=name, created=report.created, python=report.target_python, tool_version=report.tool_version)


def one_sided(a: Report, b: Report) -> Tuple[Tuple[Finding, ...], Tuple[Finding, ...], Tuple[Regraded, ...]]:
    """Findings only A has, only B has, and those both have with another severity (matched by id)."""
    by_id_a = {f.id: f for f in a.findings}
    by_id_b = {f.id: f for f in b.findings}
    only_a = tuple(f for f in a.findings if f.id not in by_id_b)
    only_b = tuple(f for f in b.findings if f.id not in by_id_a)
    regraded = tuple(Regraded(by_id_a[f.id], f) for f in b.findings if f.id in by_id_a and by_id_a[f.id].severity != f.severity)
    return only_a, only_b, regraded


def compare(a: Report, b: Report, name_a: str = "A", name_b: str = "B") -> Comparison:
    ranked, uncompared = ranked_differences(a.facts, b.facts)
    only_a, only_b, regraded = one_sided(a, b)
    return Comparison(
        a=side(a, name_a),
        b=side(b, name_b),
        ranked=tuple(ranked),
        rest=tuple(other_differences(a.facts, b.facts)),
        uncompared=tuple(uncompared),
        only_a=only_a,
        only_b=only_b,
        regraded=regraded,
    )
