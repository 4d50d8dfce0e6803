"""Showing a model's forensics: the lines `envdoctor inspect` prints, as text and as Markdown.

Findings themselves are drawn by the shared renderers (render/terminal.py, render/markdown.py); this
module only lays out the model's own facts (members, who saved it, each entry's verdict).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Callable, Iterator, List, Mapping

from rich.text import Text

from envdoctor.model import Report
from envdoctor.render import markdown as markdown_renderer
from envdoctor.escape import escaped
from envdoctor.knowledge import sb3_verdicts
from envdoctor.render import kit, summary_line
from envdoctor.render.diagnosis import markdown_lines
from envdoctor.render.terminal import diagnosis_block, finding_block
from envdoctor.render.view import ReportRenderer

SHOWN = 20  # list items shown per model; the JSON report keeps them all
SAVED_WITH = (("python", "Python"), ("stable_baselines3", "SB3"), ("torch", "torch"), ("numpy", "NumPy"), ("gymnasium", "Gymnasium"), ("gym", "Gym"), ("cloudpickle", "cloudpickle"), ("os", "OS"))


def saved_with(model: Mapping[str, Any]) -> str:
    info = model["system_info"]
    parts = [f"{label} {info[key]}" for key, label in SAVED_WITH if info.get(key)]
    if parts:
        return " · ".join(parts)
    if info.get("unrecognised"):
        return f"system_info.txt unrecognised ({info['unrecognised']})"
    return "no system_info.txt (SB3 older than 1.2?)"


def producer_line(model: Mapping[str, Any]) -> str:
    producer = model["producer"]
    if not producer["code_layouts"]:
        return "no code pickled by value"
    minors = ", ".join(producer["code_minors"]) or "undetermined"
    agreement = "agrees with system_info.txt" if producer["consistent"] else "DISAGREES with system_info.txt"
    return f"pickled code: layout {', '.join(producer['code_layouts'])}, Python {minors} from its bytecode; {agreement}"


def function_lines(function: Mapping[str, Any], effect: str) -> List[str]:
    where = f"{function['filename']}:{function['firstlineno']}" if function.get("firstlineno") else function["filename"]
    lines = [f"{function['qualname']} (module {function['module']}, {where}); made by Python {function['producer_minor'] or function['python_guess']}; here: {effect}"]
    details = []
    if function["closure"]:
        details.append(f"closure {function['closure']}")
    if function["consts"]:
        details.append(f"constants {function['consts']}")
    if function["names"]:
        details.append(f"names {function['names']}")
    if function["globals"]:
        details.append(f"globals {function['globals']}")
    if details:
        lines.append("; ".join(details))
    return lines


def bounded(items: List[Any], line: Callable[[Any], str] = str) -> List[str]:
    """`line(item)` for the first SHOWN items, then how many more there are."""
    return [line(item) for item in items[:SHOWN]] + ([more(items)] if len(items) > SHOWN else [])


def more(items: List[Any]) -> str:
    return f"… and {len(items) - SHOWN} more"


def listed(items: List[Any]) -> str:
    return ", ".join(bounded(list(items)))


def entry_lines(model: Mapping[str, Any], target: Mapping[str, Any]) -> Iterator[tuple]:
    """(indent, text) rows for every `:serialized:` entry."""
    minor = sb3_verdicts.target_minor(target)
    for entry in model["entries"][:SHOWN]:
        numpy = f", NumPy {entry['numpy_major']} pickle" if entry["numpy_major"] else ""
        yield 2, f"{entry['key']:<24} {entry['verdict']:<10} {entry['bytes']} bytes{numpy}; needs {listed(entry['modules']) or 'nothing'}"
        for reason in bounded(entry["reasons"]) if entry["verdict"] in ("dangerous", "corrupt") or not entry["functions"] else ():
            yield 6, reason
        for function in entry["functions"][:SHOWN]:
            first, *rest = function_lines(function, sb3_verdicts.effect(function, minor).value)
            yield 6, first
            for line in rest:
                yield 8, line
        if entry["classes"]:
            yield 6, f"classes pickled by value: {listed(entry['classes'])}"
    if len(model["entries"]) > SHOWN:
        yield 2, more(model["entries"])


def weights_lines(model: Mapping[str, Any]) -> Iterator[tuple]:
    """(indent, text) rows for every `.pth` member, as torch.load(weights_only=True) would take it."""
    for member in model.get("weights", ())[:SHOWN]:
        yield 2, f"{member['name']:<24} {member['verdict']}"
        for reason in bounded(member["reasons"]):
            yield 6, reason


def schedule_lines(model: Mapping[str, Any]) -> Iterator[str]:
    for key, plan in model["schedules"].items():
        yield f"{key} ({plan['was']}) → {plan['value']!r}: {plan['source']}"


def text(model: Mapping[str, Any], target: Mapping[str, Any]) -> str:
    """The plain-text forensics block (without findings)."""
    algorithm = (model.get("algorithm") or {}).get("name", "unknown algorithm")
    lines = [
        f"{PurePath(model['path']).name}: {model['file_bytes']} bytes, SB3 {model['sb3_version'] or '?'}, {algorithm} (read in {model['elapsed_ms']:.1f} ms, nothing executed)",
        f"  saved with: {saved_with(model)}",
        f"  {producer_line(model)}",
        f"  judged for: Python {(target.get('python') or {}).get('version', '?')} {(target.get('python') or {}).get('executable', '')}".rstrip(),
        "members:",
        *(f"  {line}" for line in bounded(model["members"], lambda m: f"{m['name']:<32} {m['size']:>12} bytes")),
        "serialized entries (data: safe, nothing but data; code: contains code, never proven safe; dangerous: do not load):",
        *(" " * indent + row for indent, row in entry_lines(model, target)),
        *(["weights (judged as torch.load(weights_only=True) reads them):"] if model.get("weights") else []),
        *(" " * indent + row for indent, row in weights_lines(model)),
        f"plain entries: {listed(model['plain_keys'])}",
    ]
    if model["schedules"]:
        lines += ["sanitize would set:", *(f"  {line}" for line in schedule_lines(model))]
    return "\n".join(lines) + "\n"


def markdown(model: Mapping[str, Any], target: Mapping[str, Any]) -> str:
    """The same facts for a GitHub issue: a summary and the entries folded in a code block."""
    return "\n".join([
        f"## SB3 model `{PurePath(model['path']).name}`",
        "",
        f"- saved with: {saved_with(model)}",
        f"- {producer_line(model)}",
        f"- judged for: Python {(target.get('python') or {}).get('version', '?')}",
        "",
        "<details><summary>Members and entries</summary>",
        "",
        "```",
        text(model, target).rstrip(),
        "```",
        "",
        "</details>",
        "",
    ])


def report_terminal(report: Report, verbose: bool = False, color: bool = False, width: int = 110) -> str:
    """`envdoctor inspect`'s terminal view: each model's forensics, then the findings about them."""
    report = escaped(report)
    models = report.facts["models"]
    console = kit.console(width, color)
    diagnosis_block(console, report)
    for model in models["files"]:
        console.out(text(model, models["target"]), end="")
    console.print()
    for finding in report.findings:
        finding_block(console, finding, verbose)
    console.print(Text(summary_line(report)))
    return kit.drawn(console)


def report_markdown(report: Report) -> str:
    report = escaped(report)
    models = report.facts["models"]
    parts = ["\n".join(markdown_lines(report))] if report.diagnosis else []
    parts += [markdown(model, models["target"]) for model in models["files"]]
    parts += [markdown_renderer.finding_section(f) for f in report.findings]
    return "\n".join(parts)


@dataclass(frozen=True)
class ModelsRenderer(ReportRenderer):
    """`envdoctor inspect`'s report: each model's forensics before the findings about them."""

    def terminal(self, verbose: bool = False, color: bool = False) -> str:
        return report_terminal(self.report, verbose=verbose, color=color)

    def markdown(self) -> str:
        return report_markdown(self.report)
