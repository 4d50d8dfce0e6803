"""Markdown to paste into a GitHub issue: a summary table, each finding with its remedy, the key facts;
the whole report fits in an issue body, and the full facts travel in the JSON attached to it."""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, Tuple

from envdoctor.model import POWERSHELL, PYTHON, Finding, Remedy, Report
from envdoctor.probe import table as probe_table
from envdoctor.escape import escape_control, escaped
from envdoctor.render import diagnosis, domain_title, headline, not_checked, part, summary_line
from envdoctor.render.kit import BADGES, cell, fence
from envdoctor.words import gib


def remedy_block(remedy: Remedy) -> str:
    """A shell remedy as one line in an `sh` block, Python code in a `python` block."""
    if remedy.kind == PYTHON:
        return fence(remedy.command, "python")
    return fence(escape_control(remedy.command, multiline=False), "powershell" if remedy.kind == POWERSHELL else "sh")


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


def probe_section(probe) -> str:
    """The ladder as a table (stage, status, time, note), then what bisection tried."""
    lines = [f"### Probe ladder: {probe_table.summary(probe)}", "", "| Stage | Status | Time | Note |", "|---|---|---|---|"]
    lines += [f"| {cell(title)} | {status.label} | {seconds} | {cell(note)} |" for status, title, seconds, note in probe_table.rows(probe)]
    bisection = probe_table.bisection_rows(probe)
    if bisection:
        lines += ["", "| Bisection setting | Outcome | What happened |", "|---|---|---|"]
        lines += [f"| `{cell(setting)}` | {outcome} | {cell(summary)} |" for setting, outcome, summary in bisection]
    return "\n".join(lines) + "\n"


TICKET_LIMIT = 20_000  # GitHub refuses issue bodies over 65,536 characters; a ticket should be read, not scrolled
LISTED = 40  # entries of one key-facts row before "… and N more"
CELL = 1500  # characters of one table cell
TITLE = 120  # characters of a title in the findings table; its section below has it whole
FULL_FACTS = "Full facts in the attached JSON report (saved under ./reports, or written with `--json report.json`)."
TORCH_FAMILY = ("torch", "torchvision", "torchaudio", "triton", "pytorch-triton")
SB3 = ("stable-baselines3", "sb3-contrib")
GYM = ("gymnasium", "gym")


def clipped(text: str, limit: int = CELL) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def listed(items: List[str]) -> str:
    """`items` comma-separated, at most LISTED of them."""
    shown = ", ".join(items[:LISTED])
    return shown + (f", … and {len(items) - LISTED} more" if len(items) > LISTED else "")


def installed(report: Report) -> Dict[str, str]:
    """Installed distributions, canonical name → version, from whatever the report recorded."""
    distributions = part(report.facts, "target").get("distributions")
    if not isinstance(distributions, list):
        return {}
    versions = {}
    for entry in distributions:
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            versions[re.sub(r"[-_.]+", "-", entry["name"]).lower()] = str(entry.get("version"))
    return versions


def versions_of(versions: Mapping[str, str], names) -> str:
    """e.g. "torch 2.11.0, triton 3.6.0"; a report that recorded no distributions says so, not "not installed"."""
    return listed([f"{name} {versions[name]}" for name in names if name in versions]) or ("not installed" if versions else "not recorded")


def gpu_text(gpu: Mapping) -> str:
    return f"{gpu.get('name', '?')} (sm {gpu.get('compute_capability', '?')}, {gib(gpu.get('memory_total_bytes'))})"


def key_facts(report: Report) -> List[Tuple[str, str]]:
    """The facts a maintainer asks for about a torch/SB3 environment; the rest stays in the JSON."""
    versions = installed(report)
    build = part(report.facts, "target", "torch_build")
    gpu = part(report.facts, "gpu")
    gpus = gpu.get("gpus") if isinstance(gpu.get("gpus"), list) else []
    driver = part(gpu, "driver")
    nvidia = sorted(name for name in versions if name.startswith(("nvidia-", "cuda-")))
    return [
        ("torch family", versions_of(versions, TORCH_FAMILY) + (f"; built for CUDA {build['cuda']}" if build.get("cuda") else "")),
        ("NVIDIA wheels", listed([f"{name} {versions[name]}" for name in nvidia]) or ("none" if versions else "not recorded")),
        ("NumPy", versions_of(versions, ("numpy",))),
        ("SB3", versions_of(versions, SB3)),
        ("Gymnasium", versions_of(versions, GYM)),
        ("Driver", f"{driver.get('version', '?')} (CUDA {driver.get('cuda', '?')})" if driver else "not found"),
        ("GPU", listed([gpu_text(g) for g in gpus if isinstance(g, Mapping)]) or "none found"),
        ("Distributions", f"{len(versions)} installed"),
    ]


def key_facts_section(report: Report) -> str:
    rows = [f"| {label} | {cell(clipped(value))} |" for label, value in key_facts(report)]
    return "\n".join(["### Key facts", "", "| | |", "|---|---|", *rows, "", FULL_FACTS]) + "\n"


def fitted(head: List[str], details: List[str], tail: List[str]) -> str:
    """The ticket within TICKET_LIMIT: the details of the last findings give way first (the table above
    still lists them), then whatever is left is cut; the JSON report holds it all."""
    details = list(details)
    while True:
        dropped = len([d for d in details if d is None])
        note = [f"_Details of {dropped} more finding{'s' if dropped > 1 else ''} are in the attached JSON report._\n"] if dropped else []
        text = "\n".join(head + [d for d in details if d is not None] + note + tail)
        if len(text) <= TICKET_LIMIT or all(d is None for d in details):
            break
        details[max(i for i, d in enumerate(details) if d is not None)] = None
    if len(text) > TICKET_LIMIT:
        cut = "\n\n_Cut to fit a GitHub issue. " + FULL_FACTS + "_\n"
        text = text[: text.rfind("\n", 0, TICKET_LIMIT - len(cut))] + cut
    return text


def render(report: Report, cause_shown: bool = False) -> str:
    """The Markdown for a GitHub issue; `cause_shown` when a section above it already opened with the diagnosis."""
    report = escaped(report)
    parts = [
        "## envdoctor report",
        "",
        f"**{summary_line(report)}** · envdoctor {report.tool_version} · {report.created}",
        "",
        *([] if cause_shown else diagnosis.markdown_lines(report)),
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
        parts += [f"| {BADGES[f.severity]} | `{f.id}` | {cell(clipped(f.title, TITLE))} |" for f in report.findings]
        parts.append("")
    tail = [probe_section(report.probe)] if report.probe else []
    return fitted(parts, [finding_section(f) for f in report.findings], tail + [key_facts_section(report)])
