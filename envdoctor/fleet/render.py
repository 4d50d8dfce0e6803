"""The fleet view as text: terminal, Markdown and JSON.

A fleet of thousands is read by what differs, not node by node: the default view shows the majority
configuration, then the outlier nodes grouped by the aspect and value they differ in (names listed up
to a bound), the findings few nodes have, what broke the policy, and the nodes without a report.
`-v` adds the per-node list, each deviation drawn like an `envdoctor diff` difference with its why.
JSON carries the groups and every node, all names included.
"""

from __future__ import annotations

import json as jsonlib
from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable, List, Sequence, Tuple, Union

from rich.console import Console
from rich.text import Text

from envdoctor.compare.readers import UNSET
from envdoctor.compare.render import IMPACT_SEVERITY
from envdoctor.escape import escaped
from envdoctor.fleet.aggregate import FindingGroup, FleetView, MissingGroup, NodeView, OutlierGroup
from envdoctor.model import Severity
from envdoctor.render import kit
from envdoctor.render.kit import badge, cell
from envdoctor.words import plural

Group = Union[OutlierGroup, FindingGroup, MissingGroup]

NAMES_SHOWN = 8  # node names listed per group; the count says how many more, JSON lists them all
VALUES_SHOWN = 5  # outlier groups shown per aspect (its most common other values)
GROUPS_SHOWN = 10  # finding groups and reasons for a missing report shown
GROUP_INDENT = 6  # under the text of "  [!] "


def headline(view: FleetView) -> str:
    counts = view.counts()
    parts = [f"{counts['matching']} of {plural(counts['nodes'], 'node')} match the majority"]
    if counts["deviating"]:
        parts.append(f"{counts['deviating']} deviate{'s' if counts['deviating'] == 1 else ''}")
    if counts["breaking_policy"]:
        parts.append(f"{counts['breaking_policy']} break{'s' if counts['breaking_policy'] == 1 else ''} the policy")
    if counts["without_report"]:
        parts.append(f"{counts['without_report']} without a report")
    return ", ".join(parts) + "."


def names(nodes: Sequence[str]) -> str:
    """At most NAMES_SHOWN node names, and how many more there are."""
    shown = ", ".join(nodes[:NAMES_SHOWN])
    return shown if len(nodes) <= NAMES_SHOWN else f"{shown}, … ({len(nodes) - NAMES_SHOWN} more)"


def setting(aspect: str, label: str, value: str) -> str:
    """ "OMP_NUM_THREADS=64" for a variable, "NVIDIA driver 535.104.05 (CUDA 12.2)" for the rest."""
    return f"{label}={value}" if aspect.startswith("threads.") else f"{label} {value}"


def outlier_line(group: OutlierGroup) -> str:
    return f"{setting(group.aspect, group.label, group.value)} on {plural(len(group.nodes), 'node')} (majority: {group.majority}): {names(group.nodes)}"


def finding_line(group: FindingGroup) -> str:
    return f"{group.finding.id} on {plural(len(group.nodes), 'node')}: {names(group.nodes)}"


def missing_line(group: MissingGroup) -> str:
    return f"{plural(len(group.nodes), 'node')}: {names(group.nodes)}"


def about(node_view: NodeView) -> str:
    resources = node_view.about.get("resources") or {}
    shown = ", ".join(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}" for k, v in sorted(resources.items()))
    return f"  ({shown})" if shown else ""


def shown_majority(view: FleetView) -> list:
    """The majority lines worth reading: a variable unset on most nodes says nothing (deviations still show)."""
    return [m for m in view.majority if m.value != UNSET]


def json(view: FleetView) -> str:
    return jsonlib.dumps(view.to_json(), indent=2) + "\n"


def node_block(console: Console, node_view: NodeView) -> None:
    severity = max((IMPACT_SEVERITY[d.impact] for d in node_view.deviations), default=Severity.OK, key=lambda s: s.rank)
    if node_view.error:
        severity = Severity.ERROR
    elif (node_view.rare_findings or node_view.policy) and severity is Severity.OK:
        severity = max((f.severity for f in (*node_view.rare_findings, *node_view.policy)), key=lambda s: s.rank)
    line = Text.assemble("[", kit.glyph(severity), "] ", (node_view.name, "bold"), (about(node_view), "dim"))
    console.print(line)
    if node_view.error:
        kit.say(console, Text(f"no report: {node_view.error}"), 4)
    for d in node_view.deviations:
        mark = kit.glyph(IMPACT_SEVERITY[d.impact])
        kit.say(console, Text.assemble(mark, " ", (d.label, "bold"), f"  {d.a} → {d.b}"), 4)
        kit.say(console, Text(d.why), 6)
    for f in node_view.rare_findings:
        kit.say(console, Text.assemble(kit.glyph(f.severity), f" {f.title}", (f"  ({f.id}, on few nodes)", "dim")), 4)
    for f in node_view.policy:
        kit.say(console, Text.assemble(kit.glyph(f.severity), f" {f.title}", (f"  ({f.id}, policy)", "dim")), 4)


def group_line(console: Console, severity: Severity, line: str, detail: str) -> None:
    """`  [!] what on N nodes: names`, wrapped under its text, and the why below it, dimmed."""
    wrapped = Text(line).wrap(console, console.width - GROUP_INDENT)
    for number, part in enumerate(wrapped):
        part.rstrip()
        mark = Text.assemble("  [", kit.glyph(severity), "] ") if number == 0 else Text(" " * GROUP_INDENT)
        console.print(mark + part)
    if detail:
        kit.say(console, Text(detail, style="dim"), GROUP_INDENT)


def bounded(groups: Sequence[Group], limit: int, key: Callable[[Group], str] = lambda g: "") -> Tuple[List[Group], str]:
    """At most `limit` groups of each key (an aspect's values), and a line that counts the rest:
    a fleet where every node has its own kernel or its own broken file must not print a line per node."""
    seen: Counter = Counter()
    shown, rest, nodes = [], 0, set()
    for group in groups:
        seen[key(group)] += 1
        if seen[key(group)] <= limit:
            shown.append(group)
        else:
            rest += 1
            nodes.update(group.nodes)
    return shown, f"… {plural(rest, 'more group')} on {plural(len(nodes), 'node')} (-v and --json list them)" if rest else ""


def sections(view: FleetView) -> List[Tuple[str, List[Group], str]]:
    """Each kind of group under its heading, bounded, with the line counting what is left out."""
    return [
        ("Outliers, by what differs", *bounded(view.outliers, VALUES_SHOWN, lambda g: g.aspect)),
        ("Findings few nodes have", *bounded(view.rare_findings, GROUPS_SHOWN)),
        ("Policy broken", *bounded(view.policy, GROUPS_SHOWN)),
        ("Without a report", *bounded(view.missing, GROUPS_SHOWN)),
    ]


def group_parts(group: Group) -> Tuple[Severity, str, str]:
    """A group's severity, its line and the detail under it."""
    if isinstance(group, OutlierGroup):
        return IMPACT_SEVERITY[group.impact], outlier_line(group), group.why
    if isinstance(group, FindingGroup):
        return group.finding.severity, finding_line(group), group.finding.title
    return Severity.ERROR, missing_line(group), group.reason


def groups_section(console: Console, view: FleetView) -> None:
    """The deviating nodes grouped by what differs, each kind under its heading."""
    for heading, groups, rest in sections(view):
        if groups:
            console.print(Text(f"{heading}:", style="bold"))
            for group in groups:
                group_line(console, *group_parts(group))
            if rest:
                console.print(Text(f"  {rest}", style="dim"))
            console.print()


def terminal(view: FleetView, verbose: bool = False, color: bool = False, width: int = 100) -> str:
    summary, total = headline(view), plural(len(view.nodes), "node")
    view = escaped(view if verbose else replace(view, nodes=()))
    console = kit.console(width, color)
    saved = f" · reports in {view.saved_in}" if view.saved_in else ""
    console.print(Text.assemble(("envdoctor fleet", "bold"), f" · {total}{saved}"))
    console.print()
    console.print(Text("Majority configuration:", style="bold"))
    width_label = max((len(m.label) for m in view.majority), default=0)
    for m in shown_majority(view):
        console.print(Text.assemble(f"  {m.label.ljust(width_label)}  {m.value}", (f"  {m.count}/{m.of}", "dim")))
    for s in view.split:
        held = " | ".join(f"{value}: {names(nodes)}" for value, nodes in s.values.items())
        kit.say(console, Text.assemble(f"  {s.label.ljust(width_label)}  ", ("no majority", "yellow"), f"  {held}"), 0)
    console.print()
    groups_section(console, view)
    if verbose:
        console.print(Text("Nodes:", style="bold"))
        for node_view in view.nodes:
            node_block(console, node_view)
        console.print()
    console.print(Text(summary, style="bold"))
    return kit.drawn(console)


def markdown_item(group: Group) -> str:
    if isinstance(group, OutlierGroup):
        return (f"{badge(IMPACT_SEVERITY[group.impact])} **{cell(setting(group.aspect, group.label, group.value))}** on {plural(len(group.nodes), 'node')} "
                f"(majority: {cell(group.majority)}): {cell(names(group.nodes))}. {cell(group.why)}")
    if isinstance(group, FindingGroup):
        return f"{badge(group.finding.severity)} `{group.finding.id}` on {plural(len(group.nodes), 'node')}: {cell(names(group.nodes))}. {cell(group.finding.title)}"
    return f"{badge(Severity.ERROR)} {cell(missing_line(group))}: {cell(group.reason)}"


def markdown(view: FleetView) -> str:
    summary = headline(view)
    view = escaped(replace(view, nodes=()))
    parts = ["## envdoctor fleet", "", f"**{summary}**", ""]
    if view.saved_in:
        parts += [f"Reports saved in `{view.saved_in}`.", ""]
    parts += ["| Aspect | Majority | Nodes |", "|---|---|---|"]
    parts += [f"| {m.label} | {cell(m.value)} | {m.count}/{m.of} |" for m in shown_majority(view)]
    parts += [f"| {s.label} | no majority: {cell(' / '.join(s.values))} | |" for s in view.split]
    parts.append("")
    for heading, groups, rest in sections(view):
        if groups:
            parts += [f"### {heading}", "", *(f"- {markdown_item(g)}" for g in groups), *([f"- {rest}"] if rest else []), ""]
    return "\n".join(parts)


@dataclass(frozen=True)
class FleetRenderer:
    """`envdoctor fleet`'s view in the terminal, as Markdown and as JSON."""

    view: FleetView

    def terminal(self, verbose: bool = False, color: bool = False) -> str:
        return terminal(self.view, verbose=verbose, color=color)

    def markdown(self) -> str:
        return markdown(self.view)

    def json(self) -> str:
        return json(self.view)
