"""The fleet view as text: terminal, Markdown and JSON.

A fleet of thousands is read by what differs, not node by node: the default view shows the majority
configuration, then the outlier nodes grouped by the aspect and value they differ in (names listed up
to a bound), the findings few nodes have, what broke the policy, and the nodes without a report.
`-v` adds the per-node list, each deviation drawn like an `envdoctor diff` difference with its why.
JSON carries the groups and every node, all names included.
"""

from __future__ import annotations

import io
import json as jsonlib
from dataclasses import replace
from typing import Sequence

from rich.console import Console
from rich.text import Text

from envdoctor.compare.readers import UNSET
from envdoctor.compare.render import IMPACT_SEVERITY, plural
from envdoctor.fleet.aggregate import FindingGroup, FleetView, MissingGroup, NodeView, OutlierGroup
from envdoctor.model import Severity
from envdoctor.render import markdown as report_markdown
from envdoctor.render import terminal as report_terminal
from envdoctor.render.escape import escaped

NAMES_SHOWN = 8  # node names listed per group; the count says how many more, JSON lists them all
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
    line = Text.assemble("[", report_terminal.glyph(severity), "] ", (node_view.name, "bold"), (about(node_view), "dim"))
    console.print(line)
    if node_view.error:
        report_terminal.say(console, Text(f"no report: {node_view.error}"), 4)
    for d in node_view.deviations:
        mark = report_terminal.glyph(IMPACT_SEVERITY[d.impact])
        report_terminal.say(console, Text.assemble(mark, " ", (d.label, "bold"), f"  {d.a} → {d.b}"), 4)
        report_terminal.say(console, Text(d.why), 6)
    for f in node_view.rare_findings:
        report_terminal.say(console, Text.assemble(report_terminal.glyph(f.severity), f" {f.title}", (f"  ({f.id}, on few nodes)", "dim")), 4)
    for f in node_view.policy:
        report_terminal.say(console, Text.assemble(report_terminal.glyph(f.severity), f" {f.title}", (f"  ({f.id}, policy)", "dim")), 4)


def group_line(console: Console, severity: Severity, line: str, detail: str) -> None:
    """`  [!] what on N nodes: names`, wrapped under its text, and the why below it, dimmed."""
    wrapped = Text(line).wrap(console, console.width - GROUP_INDENT)
    for number, part in enumerate(wrapped):
        part.rstrip()
        mark = Text.assemble("  [", report_terminal.glyph(severity), "] ") if number == 0 else Text(" " * GROUP_INDENT)
        console.print(mark + part)
    if detail:
        report_terminal.say(console, Text(detail, style="dim"), GROUP_INDENT)


def groups_section(console: Console, view: FleetView) -> None:
    """The deviating nodes grouped by what differs, each kind under its heading."""
    sections = (
        ("Outliers, by what differs:", [(IMPACT_SEVERITY[g.impact], outlier_line(g), g.why) for g in view.outliers]),
        ("Findings few nodes have:", [(g.finding.severity, finding_line(g), g.finding.title) for g in view.rare_findings]),
        ("Policy broken:", [(g.finding.severity, finding_line(g), g.finding.title) for g in view.policy]),
        ("Without a report:", [(Severity.ERROR, missing_line(g), g.reason) for g in view.missing]),
    )
    for heading, lines in sections:
        if lines:
            console.print(Text(heading, style="bold"))
            for severity, line, detail in lines:
                group_line(console, severity, line, detail)
            console.print()


def terminal(view: FleetView, verbose: bool = False, color: bool = False, width: int = 100) -> str:
    summary, total = headline(view), plural(len(view.nodes), "node")
    view = escaped(view if verbose else replace(view, nodes=()))
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=color, no_color=not color, width=width, highlight=False, emoji=False)
    saved = f" · reports in {view.saved_in}" if view.saved_in else ""
    console.print(Text.assemble(("envdoctor fleet", "bold"), f" · {total}{saved}"))
    console.print()
    console.print(Text("Majority configuration:", style="bold"))
    width_label = max((len(m.label) for m in view.majority), default=0)
    for m in shown_majority(view):
        console.print(Text.assemble(f"  {m.label.ljust(width_label)}  {m.value}", (f"  {m.count}/{m.of}", "dim")))
    for s in view.split:
        held = " | ".join(f"{value}: {names(nodes)}" for value, nodes in s.values.items())
        report_terminal.say(console, Text.assemble(f"  {s.label.ljust(width_label)}  ", ("no majority", "yellow"), f"  {held}"), 0)
    console.print()
    groups_section(console, view)
    if verbose:
        console.print(Text("Nodes:", style="bold"))
        for node_view in view.nodes:
            node_block(console, node_view)
        console.print()
    console.print(Text(summary, style="bold"))
    return buffer.getvalue()


def cell(text: str) -> str:
    return report_markdown.cell(text)


def badge(severity: Severity) -> str:
    return report_markdown.BADGES[severity].split()[0]


def finding_item(group: FindingGroup) -> str:
    return f"{badge(group.finding.severity)} `{group.finding.id}` on {plural(len(group.nodes), 'node')}: {cell(names(group.nodes))}. {cell(group.finding.title)}"


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
    sections = (
        ("Outliers, by what differs", [f"{badge(IMPACT_SEVERITY[g.impact])} **{cell(setting(g.aspect, g.label, g.value))}** on {plural(len(g.nodes), 'node')} "
                                      f"(majority: {cell(g.majority)}): {cell(names(g.nodes))}. {cell(g.why)}" for g in view.outliers]),
        ("Findings few nodes have", [finding_item(g) for g in view.rare_findings]),
        ("Policy broken", [finding_item(g) for g in view.policy]),
        ("Without a report", [f"{badge(Severity.ERROR)} {cell(missing_line(g))}: {cell(g.reason)}" for g in view.missing]),
    )
    for heading, lines in sections:
        if lines:
            parts += [f"### {heading}", "", *(f"- {line}" for line in lines), ""]
    return "\n".join(parts)
