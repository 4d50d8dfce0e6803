"""How a diagnosis opens every view: one line, `Cause: … (confidence)`, then the evidence that links it.

Shown only when there is something to say beyond the list of findings: a linked cause, or an honest
"unknown" for a failure nothing explains. Causes that are merely possible are the findings themselves.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from envdoctor.model import Cause, Report

MAX_EVIDENCE = 6


def headline_cause(report: Report) -> Optional[Cause]:
    first = report.diagnosis[0] if report.diagnosis else None
    return first if first is not None and first.confidence != "possible" else None


def cause_line(cause: Cause) -> str:
    if cause.confidence == "none":
        return f"Cause: unknown. {cause.summary} (confidence: none)"
    return f"Cause: {cause.summary} ({cause.confidence}; {cause.id})"


def evidence_lines(cause: Cause) -> List[str]:
    return list(cause.evidence[:MAX_EVIDENCE])


def others(report: Report) -> Sequence[Cause]:
    return report.diagnosis[1:]


def markdown_lines(report: Report) -> List[str]:
    """The diagnosis at the top of a Markdown report, or nothing."""
    cause = headline_cause(report)
    if cause is None:
        return []
    lines = [f"**{cause_line(cause)}**", ""]
    lines += [f"- {line}" for line in evidence_lines(cause)]
    if cause.remedy is not None:
        lines.append(f"- **Next:** {cause.remedy.summary}" + (f" `{cause.remedy.command}`" if cause.remedy.command else ""))
    rest = others(report)
    if rest:
        lines += ["", "Other candidates: " + ", ".join(f"`{c.id}` ({c.confidence})" for c in rest)]
    return lines + [""]
