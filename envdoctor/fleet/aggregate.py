"""The fleet view: the configuration most nodes share, and the nodes that deviate, grouped by what differs.

Every node is read through the same aspects as `envdoctor diff`. A deviation is the diff from a node
that holds the majority value to this node, so it carries the same impact and one-line why ("the node
with the old driver", "the node with mixed wheels"). An aspect without a strict majority is shown as
split rather than guessing which side is the odd one.

Two passes keep memory bounded: the first reads every report down to its aspect values and findings
(nodes.py); once the majority is known, the second reads again only the reports that deviate, and
one report per aspect that holds the majority, to judge each deviation with the facts diff judges by.
A report that no longer reads as it did in the first pass (a node still writing it) is said so.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from envdoctor import codec
from envdoctor.compare.aspects import ASPECTS, compare_aspect
from envdoctor.compare.model import Difference, Impact
from envdoctor.compare.readers import Value
from envdoctor.errors import ReportReadError
from envdoctor.facts import RawFacts as Facts
from envdoctor.facts import Unrecorded
from envdoctor.fleet.nodes import Brief, NodeSource, NodeSummary, report_parts
from envdoctor.fleet.stream import mapped

CHANGED = "its report changed while the fleet was read; run again once every node has written its report"


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
    """How one node deviates: differing aspects (most likely to break first), findings few nodes have,
    and what the policy found on it."""

    name: str
    about: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""
    deviations: Tuple[Difference, ...] = ()
    rare_findings: Tuple[Brief, ...] = ()
    policy: Tuple[Brief, ...] = ()

    @property
    def deviates(self) -> bool:
        return bool(self.error or self.deviations or self.rare_findings or self.policy)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "about": dict(self.about),
            "error": self.error,
            "deviations": codec.encode(self.deviations),
            "rare_findings": [f.to_json() for f in self.rare_findings],
            "policy_findings": [f.to_json() for f in self.policy],
        }


@dataclass(frozen=True)
class OutlierGroup:
    """The nodes that hold one other value of an aspect; impact and why are the worst among them."""

    aspect: str
    label: str
    value: str
    majority: str
    impact: Impact
    why: str
    nodes: Tuple[str, ...]

    def to_json(self) -> dict:
        return {
            "aspect": self.aspect, "label": self.label, "value": self.value, "majority": self.majority,
            "impact": self.impact.value, "why": self.why, "count": len(self.nodes), "nodes": list(self.nodes),
        }


@dataclass(frozen=True)
class FindingGroup:
    """The nodes with one finding (a rare one, or a broken policy rule); severity the worst among them."""

    finding: Brief
    nodes: Tuple[str, ...]

    def to_json(self) -> dict:
        return {**self.finding.to_json(), "count": len(self.nodes), "nodes": list(self.nodes)}


@dataclass(frozen=True)
class MissingGroup:
    """The nodes without a report for one reason."""

    reason: str
    nodes: Tuple[str, ...]

    def to_json(self) -> dict:
        return {"reason": self.reason, "count": len(self.nodes), "nodes": list(self.nodes)}


@dataclass(frozen=True)
class FleetView:
    nodes: Tuple[NodeView, ...]
    majority: Tuple[Majority, ...]
    split: Tuple[Split, ...]
    outliers: Tuple[OutlierGroup, ...] = ()
    rare_findings: Tuple[FindingGroup, ...] = ()
    policy: Tuple[FindingGroup, ...] = ()
    missing: Tuple[MissingGroup, ...] = ()
    saved_in: Optional[str] = None

    @property
    def deviating(self) -> Tuple[NodeView, ...]:
        return tuple(n for n in self.nodes if n.deviates)

    def counts(self) -> Dict[str, int]:
        without = sum(1 for n in self.nodes if n.error)
        deviating = len(self.deviating)
        return {
            "nodes": len(self.nodes), "matching": len(self.nodes) - deviating, "deviating": deviating - without,
            "without_report": without, "breaking_policy": sum(1 for n in self.nodes if n.policy),
        }

    def to_json(self) -> dict:
        return {
            "saved_in": self.saved_in,
            "counts": self.counts(),
            "majority": [m.to_json() for m in self.majority],
            "split": [s.to_json() for s in self.split],
            "outliers": [g.to_json() for g in self.outliers],
            "rare_findings": [g.to_json() for g in self.rare_findings],
            "policy_findings": [g.to_json() for g in self.policy],
            "without_report": [g.to_json() for g in self.missing],
            "nodes": [n.to_json() for n in self.nodes],
        }


def majority_value(counts: Counter) -> Optional[str]:
    """The value held by more nodes than any other, None on a tie."""
    ranked = counts.most_common(2)
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    return ranked[0][0]


def interned(summary: NodeSummary, pool: Dict[Any, Any]) -> NodeSummary:
    """`summary` with its values and findings shared with equal ones of earlier nodes: a fleet mostly
    repeats itself, and summaries from worker processes arrive as copies."""
    share = lambda items: tuple(pool.setdefault(item, item) for item in items)  # noqa: E731
    return NodeSummary(summary.source, share(summary.values), share(summary.findings), share(summary.judged), summary.error)


def value_counts(reported: Sequence[NodeSummary]) -> List[Counter]:
    """For each aspect, how many nodes hold each recorded value."""
    counts: List[Counter] = [Counter() for _ in ASPECTS]
    for summary in reported:
        for counter, value in zip(counts, summary.values):
            if not isinstance(value, Unrecorded):
                counter[value] += 1
    return counts


def holders_of(reported: Sequence[NodeSummary], index: int, value: Value) -> Tuple[str, ...]:
    return tuple(s.name for s in reported if s.values[index] == value)


def majorities(reported: Sequence[NodeSummary]) -> Tuple[List[Optional[str]], List[Majority], List[Split]]:
    """Each aspect's majority value (None where split or unrecorded), the majorities and the splits."""
    tops: List[Optional[str]] = []
    majority, split = [], []
    for index, (aspect, counts) in enumerate(zip(ASPECTS, value_counts(reported))):
        top = majority_value(counts) if counts else None
        tops.append(top)
        if top is not None:
            majority.append(Majority(aspect.id, aspect.label, top, counts[top], sum(counts.values())))
        elif counts:
            split.append(Split(aspect.id, aspect.label, {v: holders_of(reported, index, v) for v in counts}))
    return tops, majority, split


def deviating_aspects(summary: NodeSummary, tops: Sequence[Optional[str]]) -> Tuple[int, ...]:
    return tuple(
        i for i, (value, top) in enumerate(zip(summary.values, tops)) if top is not None and not isinstance(value, Unrecorded) and value != top
    )


def facts_of(source: NodeSource) -> Facts:
    return report_parts(source.path)[0]


def model_facts(index: int, top: str, reported: Sequence[NodeSummary], read: Dict[str, Facts]) -> Facts:
    """The facts of a node holding the majority value of aspect `index`, read again (`read` keeps
    those read for other aspects: mostly one node holds every majority)."""
    for summary in reported:
        if summary.values[index] != top:
            continue
        try:
            if summary.name not in read:
                read[summary.name] = facts_of(summary.source)
        except ReportReadError:
            continue
        if ASPECTS[index].read(read[summary.name]) == top:
            return read[summary.name]
    raise ReportReadError(f"the reports changed while the fleet was read: none that holds the majority's {ASPECTS[index].label} reads as before")


def judged_deviations(item: Tuple[NodeSource, Tuple[int, ...]], models: Mapping[int, Facts]) -> Tuple[Tuple[Difference, ...], str]:
    """A deviating node's differences from the majority, most likely to break first, or why there are none."""
    source, indexes = item
    try:
        facts = facts_of(source)
    except ReportReadError:
        return (), CHANGED
    differences = [compare_aspect(ASPECTS[i], models[i], facts) for i in indexes]
    if not all(isinstance(d, Difference) for d in differences):
        return (), CHANGED
    return tuple(sorted(differences, key=lambda d: d.impact.rank)), ""


def rare(findings: Iterable[Brief], holders: Counter, reported: int) -> Tuple[Brief, ...]:
    """The findings no strict majority of the reported nodes shares."""
    return tuple(f for f in findings if holders[f.id] * 2 <= reported)


def finding_groups(views: Sequence[NodeView], of: Callable[[NodeView], Tuple[Brief, ...]]) -> Tuple[FindingGroup, ...]:
    """Nodes grouped by finding id, most severe first, then the most common."""
    nodes: Dict[str, List[str]] = defaultdict(list)
    worst: Dict[str, Brief] = {}
    for view in views:
        for brief in of(view):
            if not nodes[brief.id] or nodes[brief.id][-1] != view.name:
                nodes[brief.id].append(view.name)
            if brief.id not in worst or brief.severity > worst[brief.id].severity:
                worst[brief.id] = brief
    groups = [FindingGroup(worst[fid], tuple(names)) for fid, names in nodes.items()]
    return tuple(sorted(groups, key=lambda g: (-g.finding.severity.rank, -len(g.nodes), g.finding.id)))


def outlier_groups(views: Sequence[NodeView], tops: Sequence[Optional[str]]) -> Tuple[OutlierGroup, ...]:
    """Nodes grouped by the aspect and value they deviate in, most likely to break first."""
    position = {aspect.id: i for i, aspect in enumerate(ASPECTS)}
    members: Dict[Tuple[str, str], List[Tuple[str, Difference]]] = defaultdict(list)
    for view in views:
        for difference in view.deviations:
            members[(difference.aspect, difference.b)].append((view.name, difference))
    groups = []
    for (aspect, value), held in members.items():
        worst = min((d for _, d in held), key=lambda d: d.impact.rank)
        groups.append(OutlierGroup(aspect, worst.label, value, str(tops[position[aspect]]), worst.impact, worst.why, tuple(n for n, _ in held)))
    return tuple(sorted(groups, key=lambda g: (g.impact.rank, position[g.aspect], -len(g.nodes), g.value)))


def missing_groups(views: Sequence[NodeView]) -> Tuple[MissingGroup, ...]:
    nodes: Dict[str, List[str]] = defaultdict(list)
    for view in views:
        if view.error:
            nodes[view.error].append(view.name)
    return tuple(sorted((MissingGroup(reason, tuple(names)) for reason, names in nodes.items()), key=lambda g: (-len(g.nodes), g.nodes[0])))


def node_views(kept: Sequence[NodeSummary], tops: Sequence[Optional[str]], workers: Optional[int]) -> List[NodeView]:
    """Every node's view; the deviating ones judged in the second pass."""
    reported = [s for s in kept if not s.error]
    deviating = {s.name: deviating_aspects(s, tops) for s in reported}
    deviated = {i for indexes in deviating.values() for i in indexes}
    read: Dict[str, Facts] = {}
    models = {i: model_facts(i, tops[i], reported, read) for i in sorted(deviated)}
    to_judge = [(s.source, deviating[s.name]) for s in reported if deviating[s.name]]
    judged = dict(zip((source.name for source, _ in to_judge), mapped(partial(judged_deviations, models=models), to_judge, workers)))
    holders = Counter(fid for s in reported for fid in {f.id for f in s.findings})
    views = []
    for summary in kept:
        deviations, error = judged.get(summary.name, ((), summary.error))
        findings = rare(summary.findings, holders, len(reported))
        views.append(NodeView(summary.name, summary.source.about, error, deviations, findings, summary.judged))
    return views


def aggregate(summaries: Iterable[NodeSummary], saved_in: Optional[str] = None, workers: Optional[int] = None) -> FleetView:
    """The fleet view of the nodes' summaries, consumed as they come; `workers` read the deviating reports again."""
    pool: Dict[Any, Any] = {}
    kept = [interned(s, pool) for s in summaries]
    tops, majority, split = majorities([s for s in kept if not s.error])
    views = node_views(kept, tops, workers)
    return FleetView(
        tuple(views),
        tuple(majority),
        tuple(split),
        outlier_groups(views, tops),
        finding_groups(views, lambda v: v.rare_findings),
        finding_groups(views, lambda v: v.policy),
        missing_groups(views),
        saved_in,
    )
