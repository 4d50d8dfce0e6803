"""Remedies that run: every `$` line is one shell command a user can paste (bash parses it, no view
folds it), Python snippets are shown as Python, and asking for two documents on one stdout is refused."""

from __future__ import annotations

import copy
import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

from conftest import REPO, run_envdoctor
from envdoctor import engine
from envdoctor.checks.run import crashed_finding
from envdoctor.checks.run_hang import hung_finding
from envdoctor.codec import decode, encode
from envdoctor.escape import escape_control
from envdoctor.model import PYTHON, SHELL, Finding, Remedy, Report
from envdoctor.redact import cleaner
from envdoctor.render import markdown, terminal

RECORDED = sorted((REPO / "tests" / "data" / "reports").glob("*.json")) + sorted((REPO / "reports" / "samples").glob("*.json"))
SAMPLE = REPO / "reports" / "samples" / "h100-cu130.json"
HOSTILE_PYTHONS = (
    "/home/a user/env/bin/python",
    "/opt/it's here/bin/python",
    "/srv/$HOME;rm -rf x/bin/python",
    "/tmp/(paren) & `tick`/bin/python",
)


def recorded(path: Path) -> Report:
    return decode(Report, json.loads(path.read_text(encoding="utf-8")))


def mutated_facts(python: str) -> Report:
    """The H100 sample judged as if its interpreter lived at `python`, on WSL2, with a small /dev/shm,
    oversubscribed threads and a stray cu11 wheel: remedies built from paths, Python snippets and wheel lists."""
    report = recorded(SAMPLE)
    facts = copy.deepcopy(dict(report.facts))
    facts["target"]["python"]["executable"] = python
    stray = dict(facts["target"]["distributions"][0], name="nvidia-cuda-nvrtc-cu11", version="11.8.89", requires=[])
    facts["target"]["distributions"].append(stray)
    facts["system"]["kernel_release"] = "5.15.153.1-microsoft-standard-WSL2"
    facts["memory"]["shm_total_bytes"] = 64 * 2**20
    variables = facts["environ"]["variables"]
    variables["OMP_NUM_THREADS"] = "64"
    return engine.rejudge(Report(tool_version=report.tool_version, created=report.created, target_python=python, facts=facts, probe=report.probe), engine.Selection())


def crash_findings() -> List[Finding]:
    """`envdoctor run` verdicts for a crashed and a hung command whose words need quoting."""
    run = {
        "command": ["python", "-c", "import os,ctypes; print(ctypes.string_at(0))"],
        "under_gdb": False,
        "duration_s": 10.0,
        "hang_timeout_s": 30.0,
        "ending": {"kind": "signal", "returncode": -11, "exit_status": 139, "signal": 11, "signal_name": "SIGSEGV", "signal_meaning": "segmentation fault", "forwarded_signals": []},
        "python_stacks": None,
        "native_stacks": None,
    }
    return [crashed_finding(run), hung_finding(run)]


def generated_reports() -> Iterator[Report]:
    """Reports `check --no-probe --json -` writes here under a few environment variations."""
    for env in ({}, {"OMP_NUM_THREADS": "64", "KMP_DUPLICATE_LIB_OK": "TRUE"}, {"LD_LIBRARY_PATH": "/usr/local/cuda-11.8/lib64:/a dir/lib", "PYTHONPATH": "/tmp/it's"}):
        result = run_envdoctor("check", "--no-probe", "--no-save", "--json", "-", env=env, child="PYTHONPATH" in env)  # it acts at start-up
        assert result.returncode in (0, 1), result
        yield decode(Report, result.json())


@pytest.fixture(scope="module")
def reports() -> Dict[str, Report]:
    found = {path.name: recorded(path) for path in RECORDED}
    found.update({f"rejudged {path.name}": engine.rejudge(recorded(path), engine.Selection()) for path in RECORDED})
    found.update({f"python at {python!r}": mutated_facts(python) for python in HOSTILE_PYTHONS})
    found.update({f"generated {n}": report for n, report in enumerate(generated_reports())})
    found["run verdicts"] = Report(tool_version="0", created="now", target_python="python", facts={}, findings=tuple(crash_findings()))
    return found


def remedies(report: Report) -> List[Remedy]:
    return [r for f in report.findings for r in f.remedies if r.command]


def shell_commands(reports: Dict[str, Report]) -> Dict[str, str]:
    """Each distinct shell command, with the report it first came from."""
    commands: Dict[str, str] = {}
    for name, report in reports.items():
        for remedy in remedies(report):
            if remedy.kind == SHELL:
                commands.setdefault(remedy.command, name)
    return commands


def bash_syntax_error(command: str) -> str:
    """bash's complaint about `command`, or "" when it parses; `-n` reads it without running anything."""
    checked = subprocess.run(["bash", "-n"], input=command + "\n", capture_output=True, text=True, timeout=10)
    return checked.stderr if checked.returncode else ""


@pytest.mark.slow
def test_the_corpus_is_large_and_varied(reports):
    commands = shell_commands(reports)
    assert len(commands) >= 25, sorted(commands)
    assert any("pip uninstall" in c for c in commands)
    assert any(c.startswith("envdoctor run --gdb") for c in commands)
    assert any(r.kind == PYTHON for report in reports.values() for r in remedies(report))


@pytest.mark.slow
def test_every_shell_remedy_is_one_command_bash_parses(reports):
    broken = {}
    for command, source in shell_commands(reports).items():
        error = "a line break" if "\n" in command else bash_syntax_error(command)
        if error:
            broken[command] = (source, error)
    assert not broken


@pytest.mark.parametrize("python", HOSTILE_PYTHONS)
def test_commands_name_a_hostile_interpreter_path_as_one_word(python):
    commands = [r.command for r in remedies(mutated_facts(python)) if r.kind == SHELL and r.command.startswith("'")]
    assert commands
    words = [subprocess.run(["bash", "-c", f"set -- {c}; printf '%s' \"$1\""], capture_output=True, text=True, env={"PATH": os.environ["PATH"]}).stdout for c in commands]
    assert set(words) == {python}


def test_the_gdb_remedy_quotes_the_command_it_reruns():
    commands = [r.command for f in crash_findings() for r in f.remedies if r.command and "--gdb" in r.command]
    assert commands == [
        "envdoctor run --gdb -- python -c 'import os,ctypes; print(ctypes.string_at(0))'",
        "envdoctor run --gdb --hang-timeout 30 -- python -c 'import os,ctypes; print(ctypes.string_at(0))'",
    ]


@pytest.mark.slow
def test_no_dollar_line_is_folded_at_80_columns(reports):
    for name, report in reports.items():
        lines = [line.strip() for line in terminal.render(report, width=80).splitlines()]
        for remedy in remedies(report):
            if remedy.kind == SHELL:
                assert f"$ {escape_control(remedy.command, multiline=False)}" in lines, (name, remedy.command)


@pytest.mark.slow
def test_python_snippets_are_shown_as_python_not_after_a_prompt(reports):
    snippets = {r.command for report in reports.values() for r in remedies(report) if r.kind == PYTHON}
    assert {"DataLoader(..., pin_memory=False)", "DataLoader(..., num_workers=0)"} <= snippets
    for report in reports.values():
        text, md = terminal.render(report, width=80), markdown.render(report)
        for snippet in snippets & {r.command for r in remedies(report)}:
            assert f"$ {snippet}" not in text
            assert f"```python\n  {snippet}\n" in md
            assert f"```sh\n  {snippet}\n" not in md


def test_a_remedy_kind_survives_json_and_old_reports_read_as_shell():
    snippet = Remedy("Disable pinning:", "DataLoader(..., pin_memory=False)", PYTHON)
    assert decode(Remedy, json.loads(json.dumps(encode(snippet)))) == snippet
    assert decode(Remedy, {"summary": "Unset it:", "command": "unset X"}).kind == SHELL
    assert decode(Remedy, {"summary": "s", "command": "c", "kind": ["not", "a", "kind"]}).kind == SHELL
    assert "kind" not in encode(Remedy("Unset it:", "unset X"))


@pytest.mark.parametrize("path, redacted", [
    ("/root/x/python", "/root/x/python"),
    ("/root/a dir/it's/python", "/root/a dir/it's/python"),
    ("/root", "/root"),
])
def test_a_quoted_home_path_still_expands_after_redaction(path, redacted):
    command = cleaner([], "/root")(f"{shlex.quote(path)} -m pip")
    assert command.startswith("~")
    said = subprocess.run(["bash", "-c", f"set -- {command}; printf '%s' \"$1\""], capture_output=True, text=True, env={"HOME": "/root", "PATH": os.environ["PATH"]})
    assert said.stdout == redacted


@pytest.mark.parametrize("command", [
    ("check", "--no-probe"),
    ("inspect", "model.zip"),
    ("diff", "a.json", "b.json"),
    ("fleet", "--reports", "."),
])
def test_json_and_markdown_both_on_stdout_is_a_usage_error(tmp_path, command):
    result = run_envdoctor(*command, "--json", "-", "--markdown", "-", cwd=tmp_path)
    assert result.returncode == 2, result
    assert result.stdout == ""
    assert result.stderr.startswith("envdoctor: error: ") and result.stderr.count("\n") == 1, result
    assert "--json - and --markdown -" in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_one_of_them_on_stdout_still_writes_both(tmp_path):
    result = run_envdoctor("check", "--no-probe", "--no-save", "--json", "-", "--markdown", "report.md", cwd=tmp_path)
    assert result.returncode in (0, 1), result
    assert decode(Report, result.json()).findings is not None
    assert (tmp_path / "report.md").read_text(encoding="utf-8").startswith("## envdoctor report")
