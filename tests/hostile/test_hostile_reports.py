"""Hostile and faulty reports and outputs: read without hanging or tracebacks, shown without letting
outside strings drive the terminal, saved readable by their owner only, and never lost to a bad stdout.

Hostile cases are generated from one real report (`envdoctor check --no-probe --json`), so the shapes
stay those of the current collectors.
"""

from __future__ import annotations

import copy
import json
import os
import pty
import re
import select
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

from conftest import run_envdoctor
from helpers.model_files import model_zip

PAYLOADS = {
    "osc52-clipboard": "\x1b]52;c;cm0gLXJmIH4K\x07",
    "osc0-title": "\x1b]0;owned\x1b\\",
    "csi-clear-screen": "\x1b[2J\x1b[H",
    "csi-cursor-up": "\x1b[5A\x1b[2K",
    "c1-csi": "\x9b31mred",
    "bel": "ding\x07",
    "bidi-override": "report\u202egpj.exe",
    "rich-markup": "[bold red]x[/bold red][link=https://evil.invalid]y[/link]",
}
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
MARKUP = PAYLOADS["rich-markup"]
PROBE = {
    "python": "/venv/bin/python", "ending": "signal", "returncode": -11, "signal": "SIGSEGV", "duration_s": 1.5, "output_tail": "",
    "stages": [{
        "id": "import_torch", "title": "import torch", "status": "crashed", "duration_s": 0.4, "reason": "killed by SIGSEGV",
        "details": {}, "error": None, "crash": {"signal": "SIGSEGV", "frames": [{"file": "torch/__init__.py", "line": 3, "function": "<module>"}]},
    }],
    "bisection": {"stage": "import_torch", "failure": "crashed", "variations": [
        {"name": "threads", "command": "OMP_NUM_THREADS=1", "outcome": "passed", "summary": "passed"}]},
}


@pytest.fixture(scope="session")
def real_report(tmp_path_factory) -> dict:
    """A report of this machine with a crashed probe ladder, as `check --from` reads recorded ones."""
    folder = tmp_path_factory.mktemp("real")
    run = run_envdoctor("check", "--no-probe", "--no-save", "--json", "report.json", cwd=folder)
    assert run.returncode in (0, 1), run
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    report["probe"] = copy.deepcopy(PROBE)
    return report


def write(path: Path, document) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def on_terminal(*args: str, cwd: Path, timeout: float = 60) -> Tuple[int, str, str]:
    """Run the CLI with stdout on a pseudo-terminal, where nothing strips escape sequences on the way
    (NO_COLOR keeps rich's own styling out): (exit code, what the terminal received, stderr)."""
    master, slave = pty.openpty()
    child = subprocess.Popen([sys.executable, "-m", "envdoctor", *args], stdout=slave, stderr=subprocess.PIPE, cwd=cwd,
                             env={**os.environ, "NO_COLOR": "1"})
    os.close(slave)
    received, deadline = bytearray(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        if select.select([master], [], [], 0.5)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            received += chunk
        elif child.poll() is not None:
            break
    os.close(master)
    stderr = child.communicate(timeout=timeout)[1].decode("utf-8", "replace")
    return child.returncode, received.decode("utf-8", "replace").replace("\r\n", "\n"), stderr


def assert_inert(shown: str, payload: str) -> None:
    """No control character or bidi override reached the terminal; markup is shown as written."""
    found = RAW_CONTROL.search(shown)
    assert found is None, f"raw {found.group()!r} reached the terminal: {shown[max(0, found.start() - 80):found.end() + 80]!r}"
    if payload == MARKUP:
        assert MARKUP in shown
    else:
        assert "\\x" in shown or "\\u" in shown, "the payload is shown as a visible escape"


def hostile_facts(report: dict, payload: str) -> dict:
    """The report with the payload in facts every view shows: the distribution, the CPU model, the
    interpreter's path, and in a finding's title, explanation and evidence."""
    document = copy.deepcopy(report)
    facts = document["facts"]
    facts["system"].setdefault("distro", {})["PRETTY_NAME"] = f"Ubuntu {payload}"
    facts["cpu"]["model"] = f"CPU {payload}"
    facts["target"]["python"]["executable"] = f"/venv/{payload}/bin/python"
    document["findings"].append({
        "id": "wsl.kernel", "severity": "warning", "title": f"title {payload}", "explanation": f"why {payload}",
        "evidence": {"line": payload}, "remedies": [{"summary": f"do {payload}", "command": f"echo {payload}"}], "references": [],
    })
    return document


VIEWS = ["check-terminal", "check-markdown", "diff-terminal", "diff-markdown", "fleet-terminal", "inspect-terminal"]


def view_args(view: str, tmp_path: Path, report: dict, payload: str) -> List[str]:
    hostile = write(tmp_path / "hostile.json", hostile_facts(report, payload))
    plain = write(tmp_path / "plain.json", report)
    if view == "check-terminal":
        return ["check", "--from", str(hostile), "-v"]
    if view == "check-markdown":
        return ["check", "--from", str(hostile), "--markdown", "-"]
    if view.startswith("diff"):
        return ["diff", str(hostile), str(plain), "-v", *(["--markdown", "-"] if view.endswith("markdown") else [])]
    if view == "fleet-terminal":
        folder = tmp_path / "fleet"
        folder.mkdir()
        for name in ("node-a", "node-b"):
            write(folder / f"{name}.json", report)
        write(folder / f"node {payload.replace('/', '_')}.json", hostile_facts(report, payload))
        return ["fleet", "--reports", str(folder), "-v"]
    model = model_zip(tmp_path / "model.zip", {"gamma": 0.99}, system_info=f"- OS: Linux {payload}\n- Python: 3.11.7\n")
    with zipfile.ZipFile(model, "a") as archive:
        archive.writestr(f"member {payload}", b"x")
    return ["inspect", str(model)]


# one child on a pseudo-terminal per view and payload: the quick subset keeps the check's own view
ON_TERMINAL = [pytest.param(view, id=view, marks=() if view == "check-terminal" else pytest.mark.slow) for view in VIEWS]


@pytest.mark.parametrize("view", ON_TERMINAL)
@pytest.mark.parametrize("payload", list(PAYLOADS.values()), ids=list(PAYLOADS))
def test_outside_strings_reach_the_terminal_escaped(real_report, tmp_path, view, payload):
    code, shown, stderr = on_terminal(*view_args(view, tmp_path, real_report, payload), cwd=tmp_path)
    assert code in (0, 1), stderr
    assert "Traceback" not in stderr
    assert_inert(shown, payload)


def test_json_output_stays_raw_data(real_report, tmp_path):
    payload = PAYLOADS["osc52-clipboard"]
    run = run_envdoctor("check", "--from", str(write(tmp_path / "h.json", hostile_facts(real_report, payload))), "--json", "-")
    assert run.returncode in (0, 1), run
    assert run.json()["facts"]["cpu"]["model"] == f"CPU {payload}"
    assert "\x1b" not in run.stdout


def test_crash_view_and_crash_markdown_escape_the_programs_path(tmp_path):
    script = tmp_path / "train\x1b]0;owned\x07.py"
    script.write_text("import os\nos.abort()\n")
    run = run_envdoctor("run", "--", sys.executable, str(script), cwd=tmp_path, child=True)
    assert run.returncode == 134, run
    view = run.stderr[run.stderr.index("envdoctor: command"):]
    assert RAW_CONTROL.search(view) is None, view
    (markdown,) = (tmp_path / "reports").glob("crash-*.md")
    assert "\x1b" not in markdown.read_text(encoding="utf-8")
    for saved in (tmp_path / "reports").iterdir():
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600, saved


def test_a_model_with_many_members_lists_a_bounded_few(tmp_path):
    model = model_zip(tmp_path / "model.zip", {"gamma": 0.99})
    with zipfile.ZipFile(model, "a") as archive:
        for n in range(500):
            archive.writestr(f"extra/{n}", b"")
    run = run_envdoctor("inspect", str(model))
    assert run.returncode in (0, 1), run
    assert "… and 483 more" in run.stdout  # 503 members, 20 shown
    assert len(run.stdout.splitlines()) < 60


# Reports of the wrong shape inside: one line and exit 2, or the section treated as unrecorded.


def leaf_paths(document, prefix=()) -> Iterator[tuple]:
    """Every place in `document`, the first two items of each list standing for the rest."""
    if prefix:
        yield prefix
    items = document.items() if isinstance(document, dict) else enumerate(document[:2]) if isinstance(document, list) else ()
    for key, value in items:
        yield from leaf_paths(value, (*prefix, key))


def with_value(document: dict, path: tuple, value) -> str:
    """`document` as JSON with `value` at `path`; the document itself is left as it was."""
    holder = document
    for key in path[:-1]:
        holder = holder[key]
    kept = holder[path[-1]]
    holder[path[-1]] = value
    try:
        return json.dumps(document)
    finally:
        holder[path[-1]] = kept


WRONG_VALUES = {"number": 5, "text": "s", "null": None, "list": [], "object": {}}
COMMANDS: dict = {
    "check-from": lambda changed, plain, folder: ["check", "--from", changed, "-v", "--markdown", str(folder / "out.md")],
    "diff": lambda changed, plain, folder: ["diff", plain, changed, "-v", "--markdown", str(folder / "out.md")],
    "fleet": lambda changed, plain, folder: ["fleet", "--reports", str(folder)],
    # offline: the subject is the report's shape; release metadata from the network would only slow each of ~145 plans
    "fix-pin-cuda": lambda changed, plain, folder: ["fix", "--from", changed, "--pin-cuda", "12.4", "--offline"],
    "fix-mixed-wheels": lambda changed, plain, folder: ["fix", "--from", changed, "--mixed-wheels"],
    "fix-threads": lambda changed, plain, folder: ["fix", "--from", changed, "--threads"],
}


@pytest.mark.slow
@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("wrong", list(WRONG_VALUES), ids=list(WRONG_VALUES))
def test_every_field_of_the_wrong_type_is_one_line_or_unrecorded(real_report, tmp_path, command, wrong):
    plain = write(tmp_path / "plain.json", real_report)
    failures = []
    for path in leaf_paths(real_report):
        changed = tmp_path / "changed.json"
        changed.write_text(with_value(real_report, path, WRONG_VALUES[wrong]), encoding="utf-8")
        run = run_envdoctor(*COMMANDS[command](str(changed), str(plain), tmp_path), cwd=tmp_path)
        code, stderr = run.returncode, run.stderr
        lines = stderr.strip().splitlines()
        if code not in (0, 1, 2) or "Traceback" in stderr or code == 2 and not (len(lines) == 1 and lines[0].startswith("envdoctor: error:")):
            failures.append((path, code, lines[-1:] if lines else []))
    assert not failures, failures[:5]


NAMED_MUTATIONS: dict = {
    "evidence a number": lambda r: r["findings"].append({**hostile_facts(r, "")["findings"][-1], "evidence": 5}),
    "stage duration as text": lambda r: r["probe"]["stages"][0].update(duration_s="slow"),
    "crash frame without a file": lambda r: r["probe"]["stages"][0]["crash"].update(frames=[{}]),
    "facts section a list": lambda r: r["facts"].update(system=[]),
    "distro a number": lambda r: r["facts"]["system"].update(distro=5),
    "torch version a number": lambda r: r["facts"]["target"].update(torch_build={"version": 5}),
    "memory as text": lambda r: r["facts"]["memory"].update(ram_total_bytes="lots"),
    "distribution without a name": lambda r: r["facts"]["target"]["distributions"].append({}),
    "cpu flags nested": lambda r: r["facts"]["cpu"].update(flags=[["avx"]]),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("mutation", list(NAMED_MUTATIONS))
def test_seen_wrong_types_through_the_real_cli(real_report, tmp_path, mutation, command):
    document = copy.deepcopy(real_report)
    NAMED_MUTATIONS[mutation](document)
    changed = write(tmp_path / "changed.json", document)
    plain = write(tmp_path / "plain.json", real_report)
    run = run_envdoctor(*COMMANDS[command](str(changed), str(plain), tmp_path), cwd=tmp_path, timeout=60)
    assert "Traceback" not in run.stderr, run
    if run.returncode == 2:
        assert_one_line(run)
    else:
        assert run.returncode in (0, 1), run


def assert_one_line(run, *expected: str) -> None:
    assert run.returncode == 2, run
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envdoctor: error:") and "Traceback" not in run.stderr, run
    for text in expected:
        assert text in lines[0], run


# Inputs that are no regular file, or nested past any report: refused at once, never waited on. They run
# in a child under a time limit, so a wait fails the test instead of hanging the suite, and the nesting
# meets a fresh interpreter's stack, not one under pytest's frames.

NOT_FILES: dict = {
    "fifo": lambda path: os.mkfifo(path),
    "folder": lambda path: path.mkdir(),
}


def read_by(command: str, target: Path, plain: Path, folder: Path) -> List[str]:
    return {"check-from": ["check", "--from", str(target)], "diff-a": ["diff", str(target), str(plain)],
            "diff-b": ["diff", str(plain), str(target)], "fix-from": ["fix", "--from", str(target)]}[command]


@pytest.mark.parametrize("kind", list(NOT_FILES))
@pytest.mark.parametrize("command", ["check-from", "diff-a", "diff-b"])
def test_a_fifo_or_folder_is_refused_not_waited_on(real_report, tmp_path, kind, command):
    target = tmp_path / "report.json"
    NOT_FILES[kind](target)
    run = run_envdoctor(*read_by(command, target, write(tmp_path / "plain.json", real_report), tmp_path), cwd=tmp_path, child=True, timeout=30)
    assert_one_line(run, f"{target} is not a regular file")
    assert run.stdout == ""


def test_a_device_is_refused_not_read():
    assert_one_line(run_envdoctor("check", "--from", "/dev/zero", child=True, timeout=30), "/dev/zero is not a regular file")


def test_a_sparse_file_beyond_the_bound_is_refused(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as stream:
        stream.truncate(65 * 2**20)
    assert_one_line(run_envdoctor("check", "--from", str(big), child=True, timeout=30), "larger than 64 MiB")


@pytest.mark.parametrize("kind", list(NOT_FILES))
def test_a_fifo_or_folder_in_a_fleet_folder_is_that_nodes_unreadable_report(real_report, tmp_path, kind):
    write(tmp_path / "good.json", real_report)
    NOT_FILES[kind](tmp_path / "odd.json")
    run = run_envdoctor("fleet", "--reports", str(tmp_path), "--json", "-", child=True, timeout=30)
    assert run.returncode == 1, run
    nodes = {n["name"]: n for n in run.json()["nodes"]}
    assert "is not a regular file" in nodes["odd"]["error"] and not nodes["good"]["error"]


DEEP = {
    "beyond the json parser": lambda report: "[" * 100_000 + "]" * 100_000,
    "deep evidence": lambda report: with_value(report, ("facts", "system", "distro"), nested(300)),
}


def nested(depth: int):
    value: object = "bottom"
    for _ in range(depth):
        value = {"down": value}
    return value


@pytest.mark.parametrize("command", ["check-from", "diff-a", "diff-b", "fleet"])
@pytest.mark.parametrize("shape", list(DEEP))
def test_deep_nesting_is_one_line(real_report, tmp_path, command, shape):
    folder = tmp_path / "reports"
    folder.mkdir()
    target = folder / "deep.json"
    target.write_text(DEEP[shape](real_report), encoding="utf-8")
    plain = write(tmp_path / "plain.json", real_report)
    if command == "fleet":
        run = run_envdoctor("fleet", "--reports", str(folder), "--json", "-", child=True, timeout=60)
        assert run.returncode == 1 and "nested deeper" in run.json()["nodes"][0]["error"], run
        return
    assert_one_line(run_envdoctor(*read_by(command, target, plain, tmp_path), child=True, timeout=60), "nested deeper")


# A stdout that is closed, full or broken: the report is saved, the exit code is the command's own.

STDOUTS = {
    "full": "exec >/dev/full",
    "closed": "exec >&-",
    "broken-pipe": "exec > >(exit 0); sleep 0.2",
}


def with_stdout(kind: str, args: List[str], cwd: Path) -> subprocess.CompletedProcess:
    command = " ".join(["exec", sys.executable, "-m", "envdoctor", *(f"'{a}'" for a in args)])
    return subprocess.run(["bash", "-c", f"{STDOUTS[kind]}; {command}"], cwd=cwd, stderr=subprocess.PIPE, text=True,
                          timeout=120, env={**os.environ, "NO_COLOR": "1"})


OUTPUTS = {
    "check": ["check", "--from", "{report}", "--report-dir", "saved"],
    "check-markdown": ["check", "--from", "{report}", "--markdown", "-", "--report-dir", "saved"],
    "checks": ["checks"],
    "help": ["--help"],
}


@pytest.mark.parametrize("kind", list(STDOUTS))
@pytest.mark.parametrize("output", list(OUTPUTS))
def test_an_unusable_stdout_loses_the_output_not_the_result(real_report, tmp_path, kind, output):
    report = write(tmp_path / "recorded.json", real_report)
    args = [a.replace("{report}", str(report)) for a in OUTPUTS[output]]
    finished = with_stdout(kind, args, tmp_path)
    assert "Traceback" not in finished.stderr and "Exception ignored" not in finished.stderr, finished.stderr
    notes = [line for line in finished.stderr.splitlines() if "standard output is unusable" in line]
    assert len(notes) == 1, finished.stderr
    if args[0] == "check":
        assert finished.returncode == run_envdoctor("check", "--from", str(report), "--no-save").returncode
        assert len(list((tmp_path / "saved").glob("envdoctor-*.json"))) == 1
    else:
        assert finished.returncode == 0, finished.stderr


# Saved reports: readable by their owner only; an unwritable ./reports is a warning, not a failed check.


def in_umask_0(args: List[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"}, preexec_fn=lambda: os.umask(0))


def test_reports_are_saved_0600_in_a_0700_folder(real_report, tmp_path):
    report = write(tmp_path / "recorded.json", real_report)
    run = in_umask_0(["check", "--from", str(report), "--report-dir", "reports", "--json", "out.json", "--markdown", "out.md"], tmp_path)
    assert run.returncode in (0, 1), run.stderr
    (saved,) = (tmp_path / "reports").glob("envdoctor-*.json")
    assert stat.S_IMODE((tmp_path / "reports").stat().st_mode) == 0o700
    for path in (saved, tmp_path / "out.json", tmp_path / "out.md"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_planted_link_is_not_written_through(tmp_path, monkeypatch):
    from envdoctor import store

    monkeypatch.setattr(store, "report_name", lambda prefix="envdoctor": "fixed.json")
    (tmp_path / "reports").mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "reports" / "fixed.json").symlink_to(victim)
    from envdoctor.errors import UsageError
    from envdoctor.document import Document
    from helpers.reports import WSL2_REPORT

    with pytest.raises(UsageError, match="cannot save the report"):
        store.save_report(Document.of(WSL2_REPORT), tmp_path / "reports")
    assert victim.read_text() == "keep"


UNWRITABLE_CWD = {
    "reports is a file": lambda cwd: (cwd / "reports").write_text("not a folder"),
    "read-only folder": lambda cwd: cwd.chmod(0o500),
}


@pytest.mark.parametrize("how", list(UNWRITABLE_CWD))
def test_an_unsavable_automatic_report_is_a_warning_not_a_failed_check(tmp_path, how):
    if how == "read-only folder" and os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    cwd = tmp_path / "work"
    cwd.mkdir()
    UNWRITABLE_CWD[how](cwd)
    try:
        run = run_envdoctor("check", "--no-probe", "--only", "threads", cwd=cwd)
    finally:
        cwd.chmod(0o700)
    assert run.returncode in (0, 1), run
    warnings = [line for line in run.stderr.splitlines() if line.startswith("envdoctor: warning: report not saved")]
    assert len(warnings) == 1 and "Traceback" not in run.stderr, run
    assert "Threads" in run.stdout


def test_a_named_report_dir_that_cannot_take_it_is_an_error(real_report, tmp_path):
    (tmp_path / "taken").write_text("a file")
    run = run_envdoctor("check", "--from", str(write(tmp_path / "r.json", real_report)), "--report-dir", str(tmp_path / "taken" / "sub"))
    assert_one_line(run, "cannot save the report")
    assert run.stdout == ""


@pytest.mark.parametrize("payload", list(PAYLOADS.values()), ids=list(PAYLOADS))
def test_escape_control_shows_every_control_visibly(payload):
    from envdoctor.escape import escape_control

    shown = escape_control(f"a\tb\n{payload}")
    assert RAW_CONTROL.search(shown) is None
    assert shown.startswith("a\tb\n")
    assert "\t" not in escape_control("a\tb", multiline=False)
