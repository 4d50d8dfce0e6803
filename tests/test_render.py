"""Renderers compared as whole outputs against reviewed golden files, the model's JSON round trip, tickets
that fit a GitHub issue, and crash views that name the frame at fault."""

import json
from pathlib import Path

import pytest

from envdoctor import engine
from envdoctor.capture.render import frame_lines
from envdoctor.checks.run import crashed_finding
from envdoctor.codec import decode, encode
from envdoctor.crash import stacks
from envdoctor.document import Document
from envdoctor.model import PYTHON, CheckRun, CheckStatus, Finding, Remedy, Report, Severity
from envdoctor.render import markdown, terminal

GOLDEN = Path(__file__).parent / "data" / "render"

REPORT = Report(
    tool_version="0.1.0",
    created="2026-11-22T12:00:00+00:00",
    target_python="/home/me/venv/bin/python",
    facts={
        "system": {"distro": {"PRETTY_NAME": "Ubuntu 22.04.4 LTS"}, "kernel_release": "5.15.153.1-microsoft-standard-WSL2", "glibc": "2.35"},
        "cpu": {"model": "Intel(R) Core(TM) i7-8700", "usable_cpus": 12, "logical_cores": 12},
        "memory": {"ram_total_bytes": 16 * 2**30, "swap_total_bytes": 4 * 2**30, "shm_total_bytes": 8 * 2**30},
        "target": {
            "python": {"version": "3.10.12", "executable": "~/venv/bin/python"},
            "torch_build": {"version": "2.3.1+cu121", "cuda": "12.1"},
            "distributions": [{"name": n, "version": v} for n, v in (("torch", "2.3.1+cu121"), ("nvidia-cudnn-cu12", "8.9.2.26"), ("nvidia-cuda-nvrtc-cu11", "11.8.89"), ("numpy", "1.26.4"), ("stable_baselines3", "2.3.2"), ("Gymnasium", "0.29.1"))],
        },
        "gpu": {"driver": {"version": "552.22", "cuda": "12.4"}, "gpus": [{"name": "NVIDIA GeForce RTX 3060", "compute_capability": "8.6", "memory_total_bytes": 12 * 2**30}]},
    },
    findings=(
        Finding(
            id="wsl.linux-driver-inside",
            severity=Severity.ERROR,
            title="A Linux NVIDIA driver is installed inside WSL2",
            explanation="Under WSL2 the only working libcuda is the Windows driver's.",
            evidence={"libcuda_outside_wsl": ["/usr/lib/x86_64-linux-gnu/libcuda.so.1"]},
            remedies=(Remedy("Find the package:", "dpkg -S /usr/lib/x86_64-linux-gnu/libcuda.so.1"), Remedy("Then remove it.")),
            references=("https://docs.nvidia.com/cuda/wsl-user-guide/index.html",),
        ),
        Finding(id="wsl.kernel", severity=Severity.INFO, title="Running under WSL2", explanation="Windows driver only.",
                remedies=(Remedy("If CUDA runs out of memory with pinned buffers, disable pinning:", "DataLoader(..., pin_memory=False)", PYTHON),)),
        Finding(id="wheels.mixed-cuda-families", severity=Severity.WARNING, title="NVIDIA wheels of two CUDA families",
                remedies=(Remedy("Uninstall the wheels torch does not use:", "'/home/me/a venv/bin/python' -m pip uninstall -y nvidia-cuda-nvrtc-cu11 nvidia-cudnn-cu11 nvidia-cublas-cu11"),)),
        Finding(id="threads.kmp-duplicate-lib-ok", severity=Severity.WARNING, title="KMP_DUPLICATE_LIB_OK | is set",
                remedies=(Remedy("Unset it:", "unset KMP_DUPLICATE_LIB_OK"),)),
    ),
    checks=(
        CheckRun("wsl.kernel", CheckStatus.FOUND, 0.1),
        CheckRun("wsl.linux-driver-inside", CheckStatus.FOUND, 0.1),
        CheckRun("cpu.missing-instructions", CheckStatus.PASSED, 0.2),
        CheckRun("threads.kmp-duplicate-lib-ok", CheckStatus.FOUND, 0.1),
        CheckRun("memory.shm-small", CheckStatus.SKIPPED, 0.0, "memory facts could not be gathered: OSError: boom"),
    ),
    timings_ms={"collect.system": 3.0, "judge": 1.0},
)


def golden(name: str) -> str:
    return (GOLDEN / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "name, rendered",
    [
        ("report.txt", lambda: terminal.render(REPORT)),
        ("report-verbose.txt", lambda: terminal.render(REPORT, verbose=True)),
        ("report.md", lambda: markdown.render(REPORT)),
    ],
)
def test_whole_output_matches_the_golden_file(name, rendered):
    assert rendered() == golden(name)


def test_colour_only_when_asked():
    assert "\x1b[" in terminal.render(REPORT, color=True)
    assert "\x1b[" not in terminal.render(REPORT, color=False)


def test_json_round_trip_is_lossless():
    assert decode(Report, json.loads(Document.of(REPORT).text)) == REPORT


def test_severity_ordering():
    assert Severity.OK < Severity.INFO < Severity.WARNING < Severity.ERROR


REPO = Path(__file__).parent.parent
RECORDED = sorted((REPO / "tests" / "data" / "reports").glob("*.json")) + sorted((REPO / "reports" / "samples").glob("*.json"))


def recorded(path: Path) -> Report:
    return decode(Report, json.loads(path.read_text(encoding="utf-8")))


def crowded_report(distributions: int = 2000, findings: int = 60) -> Report:
    """An environment with thousands of distributions (NVIDIA wheels among them) and many long findings."""
    names = [f"nvidia-lib{i}-cu12" if i % 2 else f"package-{i}" for i in range(distributions)]
    facts = {**REPORT.facts, "target": {**REPORT.facts["target"], "distributions": [{"name": n, "version": "1.0"} for n in names]}}
    long = Finding(id="imports.failed", severity=Severity.ERROR, title="An import failed " * 20, explanation="Traceback line\n" * 200,
                   remedies=(Remedy("Reinstall:", "python -m pip install --force-reinstall " + " ".join(names[:100])),))
    return Report(tool_version="0.1.0", created=REPORT.created, target_python="python", facts=facts, findings=(long,) * findings)


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
