"""Renderers compared as whole outputs against reviewed golden files, the model's JSON round trip, tickets
that fit a GitHub issue, and crash views that name the frame at fault."""

import json
from pathlib import Path

import pytest
from rich.text import Text

from envdoctor import engine
from envdoctor.capture.render import frame_lines
from envdoctor.checks.run import crashed_finding
from envdoctor.codec import decode, encode
from envdoctor.crash import stacks
from envdoctor.document import Document
from envdoctor.model import Finding, Remedy, Report, Severity
from envdoctor.render import kit, markdown, terminal
from conftest import REPO, TEST_DATA
from helpers.reports import WSL2_REPORT

GOLDEN = TEST_DATA / "render"

def golden(name: str) -> str:
    return (GOLDEN / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "name, rendered",
    [
        ("report.txt", lambda: terminal.render(WSL2_REPORT)),
        ("report-verbose.txt", lambda: terminal.render(WSL2_REPORT, verbose=True)),
        ("report.md", lambda: markdown.render(WSL2_REPORT)),
    ],
)
def test_whole_output_matches_the_golden_file(name, rendered):
    assert rendered() == golden(name)


def test_colour_only_when_asked():
    assert "\x1b[" in terminal.render(WSL2_REPORT, color=True)
    assert "\x1b[" not in terminal.render(WSL2_REPORT, color=False)


def test_json_round_trip_is_lossless():
    assert decode(Report, json.loads(Document.of(WSL2_REPORT).text)) == WSL2_REPORT


def test_severity_ordering():
    assert Severity.OK < Severity.INFO < Severity.WARNING < Severity.ERROR


RECORDED = sorted((REPO / "tests" / "data" / "reports").glob("*.json")) + sorted((REPO / "reports" / "samples").glob("*.json"))


def recorded(path: Path) -> Report:
    return decode(Report, json.loads(path.read_text(encoding="utf-8")))


def crowded_report(distributions: int = 2000, findings: int = 60) -> Report:
    """An environment with thousands of distributions (NVIDIA wheels among them) and many long findings."""
    names = [f"nvidia-lib{i}-cu12" if i % 2 else f"package-{i}" for i in range(distributions)]
    facts = {**WSL2_REPORT.facts, "target": {**WSL2_REPORT.facts["target"], "distributions": [{"name": n, "version": "1.0"} for n in names]}}
    long = Finding(id="imports.failed", severity=Severity.ERROR, title="An import failed " * 20, explanation="Traceback line\n" * 200,
                   remedies=(Remedy("Reinstall:", "python -m pip install --force-reinstall " + " ".join(names[:100])),))
    return Report(tool_version="0.1.0", created=WSL2_REPORT.created, target_python="python", facts=facts, findings=(long,) * findings)


@pytest.mark.parametrize("report", [pytest.param(lambda p=p: recorded(p), id=p.name) for p in RECORDED] + [pytest.param(crowded_report, id="2000-distributions")])
def test_the_ticket_fits_a_github_issue(report):
    text = markdown.render(report())
    assert len(text) <= markdown.TICKET_LIMIT
    assert "Full facts in the attached JSON report" in text


def test_the_h100_ticket_keeps_the_facts_that_matter():
    text = markdown.render(recorded(REPO / "reports" / "samples" / "h100-cu130.json"))
    for fact in ("torch 2.11.0", "triton 3.6.0", "nvidia-cudnn-cu13 9.19.0.56", "numpy 2.5.2", "stable-baselines3 2.9.2",
                 "sb3-contrib 2.9.2", "gymnasium 1.4.0", "580.159.04", "NVIDIA H100 80GB HBM3", "### Probe ladder", "cuda.library-shadowing"):
        assert fact in text
    assert '"distributions"' not in text


def test_a_crowded_ticket_lists_every_finding_and_says_where_the_rest_is():
    text = markdown.render(crowded_report())
    assert text.count("| ❌ error | `imports.failed` |") == 60
    assert "more findings are in the attached JSON report" in text
    assert "… and 960 more" in text


# The frame at fault: the default view of a crash names the package that crashed, not the standard library.
SEGFAULT_IN_A_PACKAGE = [
    {"file": "/usr/lib/python3.12/ctypes/__init__.py", "line": 519, "function": "string_at"},
    {"file": "/home/me/venv/lib/python3.12/site-packages/badpkg/__init__.py", "line": 2, "function": "<module>"},
    {"file": "<frozen importlib._bootstrap>", "line": 488, "function": "_call_with_frames_removed"},
    {"file": "<string>", "line": 120, "function": "stage_import_torch"},
]
WAITING_WORKER = [
    {"file": "/usr/lib/python3.12/threading.py", "line": 1139, "function": "wait"},
    {"file": "/srv/app/loader.py", "line": 40, "function": "next_batch"},
    {"file": "/usr/lib/python3.12/threading.py", "line": 1030, "function": "_bootstrap"},
]


@pytest.mark.parametrize("frames, stdlib, expected", [
    (SEGFAULT_IN_A_PACKAGE, (), "<module> (badpkg/__init__.py:2)"),
    (WAITING_WORKER, (), "next_batch (loader.py:40)"),
    ([{"file": "/home/me/code/lib/python3.12/mine.py", "line": 3, "function": "f"}], ("/usr/lib/python3.12",), "f (mine.py:3)"),
    ([{"file": "/usr/lib/python3.12/ctypes/__init__.py", "line": 519, "function": "string_at"}], (), "string_at (ctypes/__init__.py:519)"),
])
def test_the_frame_at_fault_is_outside_the_standard_library(frames, stdlib, expected):
    assert stacks.frame_text(stacks.frame_at_fault(frames, stdlib, own=("<string>",))) == expected


def test_a_crashed_run_names_the_package_first():
    run = {"command": ["python", "-c", "import badpkg"], "under_gdb": False, "duration_s": 1.0, "native_stacks": None,
           "ending": {"kind": "signal", "exit_status": 139, "signal_name": "SIGSEGV", "signal_meaning": "segmentation fault"},
           "python_stacks": {"threads": [{"current": True, "kind": "main", "entry": None, "frames": SEGFAULT_IN_A_PACKAGE}]}}
    title = crashed_finding(run).title
    assert ", at <module> (badpkg/__init__.py:2) inside string_at (ctypes/__init__.py:519)" in title


def test_the_crash_stack_marks_the_frame_at_fault_however_deep():
    frames = [{"file": "/usr/lib/python3.12/json/decoder.py", "line": n, "function": "decode"} for n in range(10)] + WAITING_WORKER[1:]
    lines = frame_lines({"frames": frames}, limit=2)
    assert lines[-2] == "next_batch  loader.py:40  ← first frame outside the standard library" and lines[-1] == "…"


def test_the_probe_crash_finding_names_the_package_that_crashed():
    report = encode(recorded(REPO / "reports" / "samples" / "h100-cu130.json"))
    stage = report["probe"]["stages"][2]
    stage.update(status="crashed", crash={"signal": "SIGSEGV", "returncode": -11, "frames": SEGFAULT_IN_A_PACKAGE})
    report["probe"].update(ending="signal", signal="SIGSEGV", returncode=-11, stages=report["probe"]["stages"][:3])
    rejudged = engine.rejudge(decode(Report, report), engine.Selection(only=("probe",)))
    (crash,) = [f for f in rejudged.findings if f.id == "probe.crash"]
    assert "It died in <module> (badpkg/__init__.py:2)." in crash.explanation
    shown = " ".join(terminal.render(rejudged).split())
    assert "It died in <module> (badpkg/__init__.py:2)." in shown
    assert "at <module> (badpkg/__init__.py:2) inside string_at (ctypes/__init__.py:519)" in shown


@pytest.mark.parametrize("text", ["plain line", "tab\there", "wide 漢字 text " * 12, "trailing   ", "bell\x07 and \x1b[31m csi", "a\nb", "ü" * 150])
@pytest.mark.parametrize("indent", [0, 6])
def test_a_paragraph_without_colour_is_written_as_rich_prints_it(text, indent):
    """kit.say writes plain text on a console without colour: byte for byte what rich's own print of the
    wrapped lines gives (control characters dropped, wide characters wrapped by their cells, tabs expanded)."""
    fast = kit.console(60, False)
    kit.say(fast, Text(text), indent)
    printed = kit.console(60, False)
    lines = Text(text).wrap(printed, 60 - indent)
    for line in lines:
        line.rstrip()
    printed.print(Text("\n").join(Text(" " * indent) + line for line in lines), no_wrap=True, overflow="ignore", crop=False)
    assert kit.drawn(fast) == kit.drawn(printed)
