"""Not checked is not passed: a domain whose subject is absent (no torch, no NVIDIA GPU) shows as not
checked in every view, the summary says what and why, and the install hint appears once."""

from __future__ import annotations

import json
import re

import pytest

from conftest import assert_checks_ran, run_envdoctor, write_host_root
from envdoctor.model import CheckRun, CheckStatus, Finding, Report, Severity
from envdoctor.render import summary_line

TORCH_DOMAINS = {"cuda": "CUDA", "probe": "Probe", "wheels": "NVIDIA wheels"}
NO_TORCH = "torch is not installed"


@pytest.fixture(scope="module")
def without_torch(venvs, tmp_path_factory):
    """`check` of a real empty venv, all three views from one run: (run, report, markdown, folder)."""
    python = venvs.get("not-checked-empty")
    folder = tmp_path_factory.mktemp("not-checked")
    run = run_envdoctor("check", "--no-save", "--python", str(python), "--json", "report.json", "--markdown", "report.md", cwd=folder)
    report = json.loads((folder / "report.json").read_text())
    return run, report, (folder / "report.md").read_text(), folder


def summary_of(terminal: str) -> str:
    """The terminal view's last paragraph, its wrapped lines joined."""
    return " ".join(terminal.rstrip().split("\n\n")[-1].splitlines())


def test_without_torch_the_torch_domains_are_not_checked_in_the_terminal(without_torch):
    run, report, _, _ = without_torch
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert run.returncode == (1 if errors else 0), run  # the exit code still follows --fail-on alone
    for title in TORCH_DOMAINS.values():
        assert f"[✓] {title}\n" not in run.stdout
        assert f"[-] {title}  not checked: {NO_TORCH}\n" in run.stdout
    assert re.search(r"\d+ domains not checked: .*\(torch is not installed\)", summary_of(run.stdout)), run.stdout
    assert "SB3 model" not in run.stdout and "Imports" not in run.stdout  # not asked for: no --model, no --imports


def test_the_install_hint_appears_once(without_torch):
    run, _, markdown, _ = without_torch
    assert " ".join(run.stdout.split()).count("-m pip install torch") == 1, run.stdout  # the view wraps long paths
    assert markdown.count("-m pip install torch") == 1


def test_json_keeps_each_skipped_check_with_its_reason(without_torch):
    _, report, _, _ = without_torch
    runs = [c for c in report["checks"] if c["id"].split(".")[0] in TORCH_DOMAINS]
    assert len(runs) >= 8
    assert {(c["status"], c["reason"]) for c in runs} == {("skipped", NO_TORCH)}
    assert report["findings"] == [f for f in report["findings"] if f["id"].split(".")[0] not in TORCH_DOMAINS]


def test_markdown_lists_what_was_not_checked(without_torch):
    run, _, markdown, _ = without_torch
    for title in TORCH_DOMAINS.values():
        assert f"| {title} | {NO_TORCH} |" in markdown
    assert f"**{summary_of(run.stdout)}**" in markdown


def test_a_recorded_report_is_judged_the_same(without_torch):
    _, _, _, folder = without_torch
    run = run_envdoctor("check", "--from", "report.json", "--no-save", cwd=folder)
    for title in TORCH_DOMAINS.values():
        assert f"[-] {title}  not checked: {NO_TORCH}\n" in run.stdout, run


def test_not_checked_is_no_finding_for_fail_on(venvs, tmp_path):
    run = run_envdoctor("check", "--no-save", "--no-probe", "--only", "cuda", "--fail-on", "info", "--python", str(venvs.get("not-checked-empty")), cwd=tmp_path)
    assert run.returncode == 0, run
    assert "[-] CUDA  not checked: torch is not installed\n" in run.stdout
    assert summary_of(run.stdout) == "no problems found in what was checked · 5 checks · 1 domain not checked: CUDA (torch is not installed)"


def test_with_torch_the_cuda_checks_are_judged(tmp_path):
    """This interpreter has the real torch wheel: the same checks pass or find, never "not checked"."""
    run = run_envdoctor("check", "--no-save", "--no-probe", "--only", "cuda,wheels", cwd=tmp_path)
    assert "not checked" not in run.stdout, run
    assert "[-]" not in run.stdout


def test_a_machine_without_an_nvidia_driver_leaves_the_gpu_not_checked(tmp_path):
    root = write_host_root(tmp_path / "root", {"/proc/": ""})
    run = run_envdoctor("check", "--no-save", "--no-probe", "--only", "gpu", env={"ENVDOCTOR_ROOT": str(root)}, cwd=tmp_path)
    assert run.returncode == 0, run
    assert "[-] GPU  not checked: no NVIDIA GPU was found\n" in run.stdout
    assert summary_of(run.stdout).endswith("· 1 domain not checked: GPU (no NVIDIA GPU was found)")


def skipped(check_id: str, reason: str) -> CheckRun:
    return CheckRun(check_id, CheckStatus.SKIPPED, 0.0, reason)


def report_of(*runs: CheckRun, findings=()) -> Report:
    return Report(tool_version="0", created="now", target_python="python", facts={}, findings=tuple(findings), checks=runs)


@pytest.mark.parametrize(
    "runs, findings, expected",
    [
        ((CheckRun("cpu.a", CheckStatus.PASSED, 0.1),), (), "no problems found · 1 checks"),
        ((skipped("sb3.a", "no models facts were recorded"), skipped("imports.a", "no imports facts were recorded")), (), "no problems found · 2 checks"),
        (
            (skipped("cuda.a", NO_TORCH), skipped("probe.a", NO_TORCH), skipped("gpu.a", "no NVIDIA GPU was found")),
            (),
            "no problems found in what was checked · 3 checks · 3 domains not checked: CUDA, Probe (torch is not installed); GPU (no NVIDIA GPU was found)",
        ),
        (
            (skipped("probe.a", "no probe facts were recorded"), skipped("probe.b", NO_TORCH), skipped("numpy.a", "numpy is not installed")),
            (),
            "no problems found in what was checked · 3 checks · 2 domains not checked: Probe (torch is not installed); NumPy (numpy is not installed)",
        ),
        (
            (skipped("probe.a", NO_TORCH), CheckRun("probe.crash", CheckStatus.FOUND, 0.1)),
            (Finding("probe.crash", Severity.ERROR, "crashed"),),
            "1 error · 2 checks",
        ),
    ],
    ids=["passed", "unasked", "grouped-by-reason", "unasked-beside-absent", "a-finding-is-checked"],
)
def test_summary_line_says_what_was_not_checked_and_why(runs, findings, expected):
    assert summary_line(report_of(*runs, findings=findings)) == expected


def test_an_interpreter_without_any_ml_stack_is_probably_the_wrong_one(venvs):
    python = venvs.get("bare-no-stack")
    run = run_envdoctor("check", "--python", str(python), "--no-probe", "--no-save", "--only", "doctor", "--json", "-")
    assert_checks_ran(run.json(), "doctor.no-ml-stack")
    found = [f for f in run.json()["findings"] if f["id"] == "doctor.no-ml-stack"]
    assert run.returncode == 0 and len(found) == 1 and found[0]["severity"] == "warning", run  # below --fail-on error
    assert str(python) in found[0]["title"] and "--python" in found[0]["remedies"][0]["command"]


def test_the_test_environment_with_torch_is_not_called_the_wrong_one():
    run = run_envdoctor("check", "--no-probe", "--no-save", "--only", "doctor", "--json", "-")
    assert "doctor.no-ml-stack" not in [f["id"] for f in run.json()["findings"]]
    assert_checks_ran(run.json(), "doctor.no-ml-stack")
