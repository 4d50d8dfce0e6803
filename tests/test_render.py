"""Renderers compared as whole outputs against reviewed golden files, and the model's JSON round trip."""

import json
from pathlib import Path

import pytest

from envdoctor.model import CheckRun, CheckStatus, Finding, Remedy, Report, Severity
from envdoctor.render import json as json_renderer
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
        "target": {"python": {"version": "3.10.12", "executable": "~/venv/bin/python"}, "torch_build": {"version": "2.3.1+cu121"}},
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
        Finding(id="wsl.kernel", severity=Severity.INFO, title="Running under WSL2", explanation="Windows driver only."),
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
    assert Report.from_json(json.loads(json_renderer.render(REPORT))) == REPORT


def test_severity_ordering():
    assert Severity.OK < Severity.INFO < Severity.WARNING < Severity.ERROR
