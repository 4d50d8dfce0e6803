"""The fleet view as text: terminal, Markdown and JSON.

Deviations are drawn like `envdoctor diff` differences, majority value → this node's value.
"""

from __future__ import annotations

import io
import json as jsonlib

from rich.console import Console
from rich.text import Text

from envdoctor.compare.readers import UNSET
from envdoctor.compare.render import IMPACT_SEVERITY, plural
from envdoctor.fleet.aggregate import FleetView, NodeView
from envdoctor.model import Severity
from envdoctor.render import markdown as report_markdown
from envdoctor.render import terminal as report_terminal
from envdoctor.render.escape import escaped


def headline(view: FleetView) -> str:
    failed = sum(1 for n in view.nodes if n.node.error)
    deviating = len(view.deviating) - failed
    parts = [f"{len(view.nodes) - len(view.deviating)} of {plural(len(view.nodes), 'node')} match the majority"]
    if deviating:
        parts.append(f"{deviating} deviate{'s' if deviating == 1 else ''}")
    if failed:
        parts.append(f"{failed} without a report")
    return ", ".join(parts) + "."


def about(node_view: NodeView) -> str:
    resources = node_view.node.about.get("resources") or {}
    shown = ", ".join(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}" for k, v in sorted(resources.items()))
    return f"  ({shown})" if shown else ""


def shown_majority(view: FleetView) -> list:
    """The majority lines worth reading: a variable unset on most nodes says nothing (deviations still show)."""
    return [m for m in view.majority if m.value != UNSET]


def json(view: FleetView) -> str:
    return jsonlib.dumps(view.to_json(), indent=2) + "\n"


def node_block(console: Console, node_view: NodeView, verbose: bool) -> None:
    severity = max((IMPACT_SEVERITY[d.impact] for d in node_view.deviations), default=Severity.OK, key=lambda s: s.rank)
    if node_view.node.error:
        severity = Severity.ERROR
    elif node_view.rare_findings and severity is Severity.OK:
        severity = Severity.INFO
    line = Text.assemble("[", report_terminal.glyph(severity), "] ", (node_view.node.name, "bold"), (about(node_view), "dim"))
    console.print(line)
    if node_view.node.error:
        report_terminal.say(console, Text(f"no report: {node_view.node.error}"), 4)
    for d in node_view.deviations:
        mark = report_terminal.glyph(IMPACT_SEVERITY[d.impact])
        report_terminal.say(console, Text.assemble(mark, " ", (d.label, "bold"), f"  {d.a} → {d.b}"), 4)
        if verbose:
            report_terminal.say(console, Text(d.why), 6)
    for f in node_view.rare_findings:
        report_terminal.say(console, Text.assemble(report_terminal.glyph(f.severity), f" {f.title}", (f"  ({f.id}, on few nodes)", "dim")), 4)


def terminal(view: FleetView, verbose: bool = False, color: bool = False, width: int = 100) -> str:
    view = escaped(view)
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=color, no_color=not color, width=width, highlight=False, emoji=False)
    saved = f" · reports in {view.saved_in}" if view.saved_in else ""
    console.print(Text.assemble(("envdoctor fleet", "bold"), f" · {plural(len(view.nodes), 'node')}{saved}"))
    console.print()
    console.print(Text("Majority configuration:", style="bold"))
    width_label = max((len(m.label) for m in view.majority), default=0)
    for m in shown_majority(view):
        console.print(Text.assemble(f"  {m.label.ljust(width_label)}  {m.value}", (f"  {m.count}/{m.of}", "dim")))
    for s in view.split:
        held = " | ".join(f"{value}: {', '.join(names)}" for value, names in s.values.items())
        report_terminal.say(console, Text.assemble(f"  {s.label.ljust(width_label)}  ", ("no majority", "yellow"), f"  {held}"), 0)
    console.print()
    console.print(Text("Nodes:", style="bold"))
    for node_view in view.nodes:
        node_block(console, node_view, verbose)
    console.print()
    console.print(Text(headline(view), style="bold"))
    return buffer.getvalue()


def cell(text: str) -> str:
    return report_markdown.cell(text)


def markdown(view: FleetView) -> str:
    view = escaped(view)
    parts = ["## envdoctor fleet", "", f"**{headline(view)}**", ""]
    if view.saved_in:
        parts += [f"Reports saved in `{view.saved_in}`.", ""]
    parts += ["| Aspect | Majority | Nodes |", "|---|---|---|"]
    parts += [f"| {m.label} | {cell(m.value)} | {m.count}/{m.of} |" for m in shown_majority(view)]
    parts += [f"| {s.label} | no majority: {cell(' / '.join(s.values))} | |" for s in view.split]
    parts.append("")
    for node_view in view.deviating:
        parts += [f"### {cell(node_view.node.name)}", ""]
        if node_view.node.error:
            parts.append(f"- ❌ no report: {cell(node_view.node.error)}")
        for d in node_view.deviations:
            badge = report_markdown.BADGES[IMPACT_SEVERITY[d.impact]].split()[0]
            parts.append(f"- {badge} **{d.label}**: {cell(d.a)} → {cell(d.b)}. {cell(d.why)}")
        for f in node_view.rare_findings:
            parts.append(f"- {report_markdown.BADGES[f.severity]} `{f.id}` (on few nodes): {cell(f.title)}")
        parts.append("")
    return "\n".join(parts)
