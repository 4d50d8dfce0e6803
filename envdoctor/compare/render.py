"""A comparison as text: the terminal view, Markdown for a ticket, and JSON.

An impact is drawn with the glyph and badge of the severity it resembles, so a diff reads like a report.
The rest stays collapsed: counted in the terminal (listed with -v), folded in Markdown.
"""

from __future__ import annotations

import json as jsonlib
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Optional

from rich.console import Console
from rich.text import Text

from envdoctor import codec
from envdoctor.compare.model import Change, Comparison, Difference, Impact
from envdoctor.escape import escaped
from envdoctor.model import Finding, Severity
from envdoctor.render import kit
from envdoctor.words import plural

IMPACT_SEVERITY = {Impact.BREAKS: Severity.ERROR, Impact.MAY_BREAK: Severity.WARNING, Impact.CHANGES: Severity.INFO}
ABSENT = "—"


def shown(value: Optional[str]) -> str:
    return ABSENT if value is None else value


def rest_summary(rest: Iterable[Change]) -> str:
    counts = Counter(change.group for change in rest)
    return ", ".join(plural(n, group) for group, n in counts.items())


def not_compared(comparison: Comparison) -> str:
    """The aspects not compared, grouped by the reason, which is usually one failed fact section."""
    by_reason = {}
    for u in comparison.uncompared:
        by_reason.setdefault(u.reason, []).append(u.label)
    return "Not compared: " + "; ".join(f"{', '.join(labels)} ({reason})" for reason, labels in by_reason.items())


def headline(comparison: Comparison) -> str:
    if not comparison.matters:
        return "No difference that matters between A and B."
    counts = Counter(d.impact for d in comparison.ranked)
    parts = [f"{counts[i]} {i.value}" for i in Impact if counts[i]]
    one_sided = len(comparison.only_a) + len(comparison.only_b) + len(comparison.regraded)
    if one_sided:
        parts.append(f"{plural(one_sided, 'finding')} on one side only or judged otherwise")
    return f"{plural(len(comparison.ranked), 'difference')} to look at: " + ", ".join(parts) + "."


def json(comparison: Comparison) -> str:
    return jsonlib.dumps(codec.encode(comparison), indent=2) + "\n"


def difference_block(console: Console, difference: Difference) -> None:
    mark = kit.glyph(IMPACT_SEVERITY[difference.impact])
    kit.say(console, Text.assemble("[", mark, "] ", (difference.label, "bold"), f"  {difference.a} → {difference.b}"), 0)
    kit.say(console, Text(difference.why), 4)


def findings_block(console: Console, title: str, findings: Iterable[Finding]) -> None:
    findings = list(findings)
    if findings:
        console.print(Text(title, style="bold"))
    for finding in findings:
        line = Text.assemble(kit.glyph(finding.severity), " ", finding.title, (f"  ({finding.id})", "dim"))
        kit.say(console, line, 2)


def terminal(comparison: Comparison, verbose: bool = False, color: bool = False, width: int = 100) -> str:
    comparison = escaped(comparison)
    console = kit.console(width, color)
    console.print(Text("envdoctor diff", style="bold"))
    for label, s in (("A", comparison.a), ("B", comparison.b)):
        console.print(Text.assemble((f"  {label}  ", "bold"), f"{s.name} · {s.created} · {s.python}"))
    console.print()
    for difference in comparison.ranked:
        difference_block(console, difference)
    findings_block(console, "Findings only in A:", comparison.only_a)
    findings_block(console, "Findings only in B:", comparison.only_b)
    if comparison.regraded:
        console.print(Text("Findings judged otherwise:", style="bold"))
        for r in comparison.regraded:
            kit.say(console, Text(f"{r.a.id}: {r.a.severity.value} in A, {r.b.severity.value} in B"), 2)
    if comparison.uncompared:
        kit.say(console, Text(not_compared(comparison), style="dim"), 0)
    if comparison.rest:
        hint = "" if verbose else " (-v lists them)"
        console.print(Text(f"Other differences: {rest_summary(comparison.rest)}{hint}", style="dim"))
        if verbose:
            for change in comparison.rest:
                kit.say(console, Text(f"{change.group} {change.name}: {shown(change.a)} → {shown(change.b)}"), 2)
    console.print()
    console.print(Text(headline(comparison), style="bold"))
    return kit.drawn(console)


def cell(value: Optional[str]) -> str:
    """A side's value as a Markdown cell; an aspect one side lacks shows as a dash."""
    return kit.cell(shown(value))


def markdown(comparison: Comparison) -> str:
    comparison = escaped(comparison)
    a, b = comparison.a, comparison.b
    parts = [
        "## envdoctor diff", "",
        f"**{headline(comparison)}**", "",
        "| | A | B |", "|---|---|---|",
        f"| Report | {cell(a.name)} | {cell(b.name)} |",
        f"| Created | {cell(a.created)} | {cell(b.created)} |",
        f"| Python | {cell(a.python)} | {cell(b.python)} |",
        "",
    ]
    if comparison.ranked:
        parts += ["| Impact | Aspect | A | B | Why |", "|---|---|---|---|---|"]
        parts += [
            f"| {kit.badge(IMPACT_SEVERITY[d.impact])} {d.impact.value} | {d.label} | {cell(d.a)} | {cell(d.b)} | {cell(d.why)} |"
            for d in comparison.ranked
        ]
        parts.append("")
    for title, findings in (("Findings only in A", comparison.only_a), ("Findings only in B", comparison.only_b)):
        if findings:
            parts += [f"### {title}", ""]
            parts += [f"- {kit.BADGES[f.severity]} `{f.id}`: {cell(f.title)}" for f in findings]
            parts.append("")
    if comparison.regraded:
        parts += ["### Findings judged otherwise", ""]
        parts += [f"- `{r.a.id}`: {r.a.severity.value} in A, {r.b.severity.value} in B" for r in comparison.regraded]
        parts.append("")
    if comparison.uncompared:
        parts += [not_compared(comparison), ""]
    if comparison.rest:
        rows = "\n".join(f"| {c.group} | {cell(c.name)} | {cell(c.a)} | {cell(c.b)} |" for c in comparison.rest)
        parts += [
            f"<details><summary>Other differences: {rest_summary(comparison.rest)}</summary>", "",
            "| Kind | Name | A | B |", "|---|---|---|---|", rows, "", "</details>", "",
        ]
    return "\n".join(parts)


@dataclass(frozen=True)
class ComparisonRenderer:
    """`envdoctor diff`'s comparison in the terminal, as Markdown and as JSON."""

    comparison: Comparison

    def terminal(self, verbose: bool = False, color: bool = False) -> str:
        return terminal(self.comparison, verbose=verbose, color=color)

    def markdown(self) -> str:
        return markdown(self.comparison)

    def json(self) -> str:
        return json(self.comparison)
