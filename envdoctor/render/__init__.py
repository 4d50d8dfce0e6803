"""Renderers turn a report into text: terminal (rich), Markdown for a GitHub issue, JSON.

Each format is one module with `render(report, ...) -> str`; view.py holds the one interface the renderer
of every command implements, kit.py what every view draws with. Renderers decide nothing: severities,
findings and exit codes come from the report and the CLI. What the report's formats share lives here.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Mapping, Tuple

from envdoctor.model import CheckStatus, Report, Severity
from envdoctor.words import gib

DOMAIN_TITLES = {
    "wsl": "WSL",
    "cpu": "CPU",
    "threads": "Threads",
    "memory": "Memory",
    "wheels": "NVIDIA wheels",
    "cuda": "CUDA",
    "gpu": "GPU",
    "numpy": "NumPy",
    "sb3": "SB3 model",
    "probe": "Probe",
    "requirements": "Requirements",
    "imports": "Imports",
    "doctor": "envdoctor",
}


def domain_title(domain: str) -> str:
    return DOMAIN_TITLES.get(domain, domain)


def summary_line(report: Report) -> str:
    """e.g. "1 error, 2 warnings, 1 info · 12 checks · 1 domain not checked: CUDA (torch is not
    installed)" — what a reader needs before anything else, gaps included."""
    counts = Counter(f.severity for f in report.findings)
    parts = []
    for severity, word in ((Severity.ERROR, "error"), (Severity.WARNING, "warning"), (Severity.INFO, "info")):
        n = counts.get(severity, 0)
        if n:
            parts.append(f"{n} {word}{'s' if n > 1 and severity is not Severity.INFO else ''}")
    gaps = not_checked(report)
    found = ", ".join(parts) if parts else "no problems found in what was checked" if gaps else "no problems found"
    return f"{found} · {len(report.checks)} checks" + (f" · {gaps_summary(gaps)}" if gaps else "")


def gaps_summary(gaps: List[Tuple[str, str]]) -> str:
    """"3 domains not checked: CUDA, Probe (torch is not installed); GPU (no NVIDIA GPU was found)"."""
    by_reason: Dict[str, List[str]] = {}
    for domain, reason in gaps:
        by_reason.setdefault(reason, []).append(domain_title(domain))
    groups = "; ".join(f"{', '.join(titles)} ({reason})" for reason, titles in by_reason.items())
    return f"{len(gaps)} domain{'s' if len(gaps) > 1 else ''} not checked: {groups}"


def unchecked_reason(findings: list, runs: list) -> str:
    """Why a domain was not checked: every check skipped, not all for lack of facts nobody asked for
    (no --model, no --imports); "" for a domain that was judged, found something, or was not asked."""
    if findings or not runs or any(r.status is not CheckStatus.SKIPPED for r in runs) or all(r.unasked for r in runs):
        return ""
    return "; ".join(dict.fromkeys(r.reason for r in runs if not r.unasked))


def not_checked(report: Report) -> List[Tuple[str, str]]:
    """(domain, why) for each domain of the report that was not checked, in the order the checks ran."""
    gaps = [(domain, unchecked_reason(findings, runs)) for domain, findings, runs in grouped(report)]
    return [(domain, reason) for domain, reason in gaps if reason]


def part(facts: Any, *keys: str) -> Mapping:
    """The mapping at `keys` under `facts`, or an empty one where a recorded report holds none there."""
    for key in keys:
        facts = facts.get(key) if isinstance(facts, Mapping) else None
    return facts if isinstance(facts, Mapping) else {}


def headline(report: Report) -> List[Tuple[str, str]]:
    """The few facts a maintainer reads first: system, CPU, memory, Python, torch."""
    facts: Mapping = report.facts
    system, cpu, memory = part(facts, "system"), part(facts, "cpu"), part(facts, "memory")
    python = part(facts, "target", "python")
    torch = part(facts, "target", "torch_build").get("version")
    distro = part(system, "distro").get("PRETTY_NAME") or system.get("os", "?")
    rows = [
        ("System", f"{distro}, kernel {system.get('kernel_release') or '?'}, glibc {system.get('glibc') or '?'}"),
        ("CPU", f"{cpu.get('model') or '?'} ({cpu.get('usable_cpus') or '?'} usable of {cpu.get('logical_cores') or '?'} logical)"),
        ("Memory", f"RAM {gib(memory.get('ram_total_bytes'))}, swap {gib(memory.get('swap_total_bytes'))}, /dev/shm {gib(memory.get('shm_total_bytes'))}"),
        ("Python", f"{python.get('version', '?')} {python.get('executable', report.target_python)}"),
        ("torch", str(torch or "not installed")),
    ]
    return rows


def grouped(report: Report) -> List[Tuple[str, list, list]]:
    """(domain, its findings, its check records) in the order the checks ran, then finding-only domains."""
    order: List[str] = []
    for run in report.checks:
        domain = run.id.split(".", 1)[0]
        if domain not in order:
            order.append(domain)
    for finding in report.findings:
        if finding.domain not in order:
            order.append(finding.domain)
    return [
        (
            domain,
            [f for f in report.findings if f.domain == domain],
            [c for c in report.checks if c.id.split(".", 1)[0] == domain],
        )
        for domain in order
    ]
