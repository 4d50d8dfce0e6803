"""The terminal view: one line per domain with a status glyph, findings under it with their remedies.

Glyphs and colours live only here and in the kit the other views share. Colour is used only when asked
for (the CLI passes whether stdout is a terminal and NO_COLOR is unset).
"""

from __future__ import annotations

import json

from rich.console import Console
from rich.text import Text

from envdoctor.model import POWERSHELL, PYTHON, CheckStatus, Finding, Remedy, Report, Severity
from envdoctor.probe import table as probe_table
from envdoctor.escape import escape_control, escaped
from envdoctor.probe.result import StageStatus
from envdoctor.render import diagnosis, domain_title, grouped, headline, kit, summary_line, unchecked_reason
from envdoctor.render.kit import GLYPHS, glyph, say

SKIPPED = ("-", "dim")


def all_skipped(runs: list) -> bool:
    return bool(runs) and all(r.status is CheckStatus.SKIPPED for r in runs)


def domain_line(domain: str, findings: list, runs: list, unchecked: str) -> Text:
    """`[✓] CPU`, `[!] Threads`, or `[-] CUDA  not checked: torch is not installed`."""
    if findings:
        mark, style = GLYPHS[max((f.severity for f in findings), key=lambda s: s.rank)]
    elif all_skipped(runs):
        mark, style = SKIPPED
    else:
        mark, style = GLYPHS[Severity.OK]
    line = Text("[")
    line.append(mark, style=style)
    line.append("] ")
    line.append(domain_title(domain), style="bold")
    if unchecked:
        line.append(f"  not checked: {unchecked}")
    return line


def unwrapped(console: Console, text: Text, indent: int) -> None:
    """Print `text` on one line however wide: a command folded at the console's width pastes as two."""
    console.print(Text(" " * indent) + text, no_wrap=True, overflow="ignore", crop=False)


def command_lines(console: Console, remedy: Remedy) -> None:
    """A shell remedy as one `$` line to paste; Python code as code for the user's program, with no prompt."""
    if remedy.kind == PYTHON:
        for line in remedy.command.splitlines():
            unwrapped(console, Text(line, style="cyan"), 10)
    elif remedy.kind == POWERSHELL:
        unwrapped(console, Text(f"PS> {escape_control(remedy.command, multiline=False)}", style="bold cyan"), 8)
    else:
        unwrapped(console, Text(f"$ {escape_control(remedy.command, multiline=False)}", style="bold cyan"), 8)


def finding_block(console: Console, finding: Finding, verbose: bool) -> None:
    title = Text.assemble(glyph(finding.severity), " ", (finding.title, "bold"), (f"  ({finding.id})", "dim"))
    say(console, title, 4)
    if finding.explanation:
        say(console, Text(finding.explanation), 6)
    for remedy in finding.remedies:
        say(console, Text.assemble(("→ ", "cyan"), remedy.summary), 6)
        if remedy.command:
            command_lines(console, remedy)
    if verbose and finding.evidence:
        say(console, Text(f"evidence: {json.dumps(finding.evidence, default=str)}", style="dim"), 6)


def quiet_checks(console: Console, runs: list) -> None:
    """With -v: what each check that found nothing did, so "nothing found" is visibly "judged"."""
    for run in runs:
        if run.status is CheckStatus.PASSED:
            say(console, Text.assemble(glyph(Severity.OK), f" {run.id}", (f"  {run.duration_ms:.2f} ms", "dim")), 4)
        elif run.status is CheckStatus.SKIPPED:
            say(console, Text.assemble(Text(SKIPPED[0], style=SKIPPED[1]), f" {run.id} skipped: {run.reason}"), 4)


STAGE_GLYPHS = {
    StageStatus.PASSED: GLYPHS[Severity.OK],
    StageStatus.SKIPPED: SKIPPED,
    StageStatus.NOT_RUN: ("·", "dim"),
    StageStatus.FAILED: GLYPHS[Severity.ERROR],
    StageStatus.CRASHED: GLYPHS[Severity.ERROR],
    StageStatus.HUNG: GLYPHS[Severity.ERROR],
    StageStatus.SLOW: GLYPHS[Severity.WARNING],
    StageStatus.EXITED: GLYPHS[Severity.ERROR],
}


def probe_section(console: Console, probe) -> None:
    """The ladder's stages with status and time (why, under a stage that did not pass), then what bisection tried."""
    console.print(Text.assemble(("Probe ladder", "bold"), f"  {probe_table.summary(probe)}"))
    for status, title, seconds, note in probe_table.rows(probe):
        mark, style = STAGE_GLYPHS[status]
        console.print(Text.assemble("  ", (mark, style), f" {title.ljust(30)} {seconds.rjust(8)}  ", (status.label, style)))
        if note and status is not StageStatus.NOT_RUN:
            say(console, Text(note, style="dim"), 6)
    bisection = probe_table.bisection_rows(probe) or ()
    for setting, outcome, summary in bisection:
        if outcome != "not-applicable":
            say(console, Text.assemble("bisect ", (setting, "cyan"), f": {outcome}", (f" ({summary})", "dim")), 2)
    idle = [setting for setting, outcome, _ in bisection if outcome == "not-applicable"]
    if idle:
        say(console, Text(f"bisect: not applicable here: {'; '.join(idle)}", style="dim"), 2)


def diagnosis_block(console: Console, report: Report) -> None:
    """`Cause: … (confidence)`, the evidence that links it and the first step; nothing when no cause stands out."""
    cause = diagnosis.headline_cause(report)
    if cause is None:
        return
    style = "bold yellow" if cause.confidence == "none" else "bold red"
    say(console, Text(diagnosis.cause_line(cause), style=style), 0)
    for line in diagnosis.evidence_lines(cause):
        say(console, Text(f"· {line}"), 4)
    if cause.remedy is not None:
        say(console, Text.assemble(("→ ", "cyan"), cause.remedy.summary), 4)
        if cause.remedy.command:
            command_lines(console, cause.remedy)
    rest = diagnosis.others(report)
    if rest:
        say(console, Text("Other candidates: " + ", ".join(f"{c.id} ({c.confidence})" for c in rest), style="dim"), 4)


def render(report: Report, verbose: bool = False, color: bool = False, width: int = 100) -> str:
    report = escaped(report)
    console = kit.console(width, color)
    console.print(Text.assemble(("envdoctor ", "bold"), f"{report.tool_version} · {report.created}"))
    diagnosis_block(console, report)
    for label, value in headline(report):
        console.print(Text.assemble(("  " + label.ljust(8), "dim"), value))
    console.print()
    for domain, findings, runs in grouped(report):
        unchecked = unchecked_reason(findings, runs)
        if not verbose and not findings and not unchecked and all_skipped(runs):
            continue  # not asked for: the SB3 checks without --model, the imports without --imports
        say(console, domain_line(domain, findings, runs, unchecked), 0)
        for finding in findings:
            finding_block(console, finding, verbose)
        if verbose:
            quiet_checks(console, runs)
    console.print()
    if report.probe:
        probe_section(console, report.probe)
        console.print()
    say(console, Text(summary_line(report), style="bold"), 0)
    if verbose:
        timings = ", ".join(f"{name} {ms:.0f} ms" for name, ms in report.timings_ms.items())
        console.print(Text(f"timings: {timings}", style="dim"))
    return kit.drawn(console)
