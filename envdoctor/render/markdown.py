"""Markdown to paste into a GitHub issue: a summary table, each finding with its remedy, facts folded."""

from __future__ import annotations

import json
import re

from envdoctor.model import PYTHON, Finding, Remedy, Report, Severity
from envdoctor.probe import table as probe_table
from envdoctor.render import domain_title, headline, not_checked, summary_line
from envdoctor.render.escape import escape_control, escaped

BADGES = {
    Severity.OK: "✅ ok",
    Severity.INFO: "ℹ️ info",
    Severity.WARNING: "⚠️ warning",
    Severity.ERROR: "❌ error",
}


def cell(text: str) -> str:
    """One table cell: a `|` or a line break would end it, `<` would open HTML."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\r", " ").replace("\t", " ").replace("\n", " ")


def fence(body: str, language: str = "") -> str:
    """`body` as a fenced code block whose fence is longer than any run of backticks inside it,
    so nothing in it can close the block early."""
    ticks = "`" * max([3] + [len(run) + 1 for run in re.findall("`{3,}", body)])
    return f"{ticks}{language}\n{body}\n{ticks}\n"


def remedy_block(remedy: Remedy) -> str:
    """A shell remedy as one line in an `sh` block, Python code in a `python` block."""
    if remedy.kind == PYTHON:
        return fence(remedy.command, "python")
    return fence(escape_control(remedy.command, multiline=False), "sh")


def finding_section(finding: Finding) -> str:
    lines = [f"### {BADGES[finding.severity]} `{finding.id}`: {escape_control(finding.title, multiline=False)}", ""]
    if finding.explanation:
        lines += [finding.explanation, ""]
    for remedy in finding.remedies:
        lines.append(f"- {remedy.summary}")
        if remedy.command:
            lines += ["  " + line for line in remedy_block(remedy).splitlines()]
    if finding.references:
        lines += ["", "References: " + ", ".join(f"<{r}>" for r in finding.references)]
    return "\n".join(lines).rstrip() + "\n"


def folded(summary: str, body: str, language: str = "json") -> str:
    return f"<details><summary>{summary}</summary>\n\n{fence(body, language)}\n</details>\n"


def probe_section(probe) -> str:
    """The ladder as a table (stage, status, time, note), then what bisection tried."""
    lines = [f"### Probe ladder: {probe_table.summary(probe)}", "", "| Stage | Status | Time | Note |", "|---|---|---|---|"]
    lines += [f"| {cell(title)} | {status.label} | {seconds} | {cell(note)} |" for status, title, seconds, note in probe_table.rows(probe)]
    bisection = probe_table.bisection_rows(probe)
    if bisection:
        lines += ["", "| Bisection setting | Outcome | What happened |", "|---|---|---|"]
        lines += [f"| `{cell(setting)}` | {outcome} | {cell(summary)} |" for setting, outcome, summary in bisection]
    return "\n".join(lines) + "\n"


def render(report: Report) -> str:
    report = escaped(report)
    parts = [
        "## envdoctor report",
        "",
        f"**{summary_line(report)}** · envdoctor {report.tool_version} · {report.created}",
        "",
        "| | |",
        "|---|---|",
        *(f"| {label} | {cell(value)} |" for label, value in headline(report)),
        "",
    ]
    gaps = not_checked(report)
    if gaps:
        parts += ["| Not checked | Why |", "|---|---|", *(f"| {cell(domain_title(d))} | {cell(reason)} |" for d, reason in gaps), ""]
    if report.findings:
        parts += ["| Severity | Check | Finding |", "|---|---|---|"]
        parts += [f"| {BADGES[f.severity]} | `{f.id}` | {cell(f.title)} |" for f in report.findings]
        parts.append("")
        parts += [finding_section(f) for f in report.findings]
    if report.probe:
        parts.append(probe_section(report.probe))
    parts.append(folded("Facts", json.dumps(report.facts, indent=2, default=str)))
    return "\n".join(parts)
