"""The fleet view: the configuration most nodes share, and how each node deviates from it.

Every node is read through the same aspects as `envdoctor diff`; a deviation is the diff from a node
that holds the majority value to this node, so it carries the same impact and one-line why ("the node
with the old driver", "the node with mixed wheels"). An aspect without a strict majority is shown as
split rather than guessing which side is the odd one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Tuple

from envdoctor.compare.aspects import ASPECTS, compare_aspect
from envdoctor.compare.model import Difference
from envdoctor.compare.readers import Unrecorded
from envdoctor.model import Finding, Report


@dataclass(frozen=True)
class Node:
    """One node's report, or why there is none; `about` holds what is known of the node (Ray id, file)."""

    name: str
    report: Optional[Report]
    error: str = ""
    about: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Majority:
    """The value most nodes hold for one aspect."""

    aspect: str
    label: str
    value: str
    count: int
    of: int

    def to_json(self) -> dict:
        return {"aspect": self.aspect, "label": self.label, "value": self.value, "nodes": self.count, "of": self.of}


@dataclass(frozen=True)
class Split:
    """An aspect whose values no strict majority shares: each value with the nodes that hold it."""

    aspect: str
    label: str
    values: Mapping[str, Tuple[str, ...]]

    def to_json(self) -> dict:
        return {"aspect": self.aspect, "label": self.label, "values": {v: list(n) for v, n in self.values.items()}}


@dataclass(frozen=True)
class NodeView:
    """How one node deviates: differing aspects (most likely to break first) and findings few nodes have."""

    node: Node
    deviations: Tuple[Difference, ...] = ()
    rare_findings: Tuple[Finding, ...] = ()

    @property
    def deviates(self) -> bool:
        return bool(self.node.error or self.deviations or self.rare_findings)

    def to_json(self) -> dict:
        return {
            "name": self.node.name,
            "about": dict(self.node.about),
            "error": self.node.error,
            "deviations": [d.to_json() for d in self.deviations],
            "rare_findings": [f.to_json() for f in self.rare_findings],
        }


@dataclass(frozen=True)
class FleetView:
    nodes: Tuple[NodeView, ...]
    majority: Tuple[Majority, ...]
    split: Tuple[Split, ...]
    saved_in: Optional[str] = None

    @property
    def deviating(self) -> Tuple[NodeView, ...]:
        return tuple(n for n in self.nodes if n.deviates)

    def to_json(self) -> dict:
        return {
            "saved_in": self.saved_in,
            "majority": [m.to_json() for m in self.majority],
            "split": [s.to_json() for s in self.split],
            "nodes": [n.to_json() for n in self.nodes],
        }


def majority_value(values: Mapping[str, str]) -> Optional[str]:
    """The value held by more nodes than any other, None on a tie."""
    ranked = Counter(values.values()).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def rare_findings(report: Report, holders: Counter, reported: int) -> Tuple[Finding, ...]:
    """This node's findings that no strict majority of the reported nodes shares."""
    return tuple(f for f in report.findings if holders[f.id] * 2 <= reported)


def aggregate(nodes: List[Node], saved_in: Optional[str] = None) -> FleetView:
    reported = [n for n in nodes if n.report is not None]
    deviations: Dict[str, List[Difference]] = {n.name: [] for n in reported}
    majority, split = [], []
    for aspect in ASPECTS:
        read = {n.name: aspect.read(n.report.facts) for n in reported}
        values = {name: v for name, v in read.items() if not isinstance(v, Unrecorded)}
        if not values:
            continue
        top = majority_value(values)
        if top is None:
            holders = {v: tuple(name for name, held in values.items() if held == v) for v in dict.fromkeys(values.values())}
            split.append(Split(aspect.id, aspect.label, holders))
            continue
        majority.append(Majority(aspect.id, aspect.label, top, list(values.values()).count(top), len(values)))
        model = next(n.report.facts for n in reported if values.get(n.name) == top)
        for node in reported:
            if values.get(node.name, top) != top:
                deviations[node.name].append(compare_aspect(aspect, model, node.report.facts))
    holders = Counter(fid for n in reported for fid in {f.id for f in n.report.findings})
    views = tuple(
        NodeView(n, tuple(sorted(deviations[n.name], key=lambda d: d.impact.rank)), rare_findings(n.report, holders, len(reported)))
        if n.report is not None
        else NodeView(n)
        for n in nodes
    )
    return FleetView(views, tuple(majority), tuple(split), saved_in)
