"""Every command over every kind of hostile input: never a traceback, never an exit code above 2.

The inputs are generated: special files (a FIFO, a device, a symlink loop, a 1 GB sparse file, a
folder, nothing at all), and contents no genuine input has (empty, binary, a line without end, JSON
and TOML nested past any parser's recursion, JSON of the wrong type). Each is handed to each command
where the command takes a file: a report to check and diff, a policy, a model to inspect, a fix
record and a report to fix from, a fleet's folder, an interpreter to diagnose. A command may refuse (exit 2, one line) or judge
(0 or 1); an exit of 3 or more, or a Python traceback anywhere in its output, fails the test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List

import pytest

from conftest import run_envdoctor, special_file

DEEP = 100000


CONTENTS: Dict[str, bytes] = {
    "empty": b"",
    "binary": bytes(range(256)) * 64,
    "endless-line": b"x" * (4 << 20),
    "deep-json-list": b"[" * DEEP + b"]" * DEEP,
    "deep-json-object": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "deep-toml": b"x = " + b"[" * DEEP + b"]" * DEEP + b"\n",
    "deep-toml-tables": b"x = " + b"{a = " * 5000 + b"1" + b"}" * 5000 + b"\n",
    "json-list": b"[]",
    "json-number": b"5",
    "json-null": b"null",
    "control-characters": b'{"facts": "\x1b[31m\x07\x00"}',
}
SPECIAL = ("fifo", "device", "symlink-loop", "sparse-1gb", "folder", "missing")


def hostile(folder: Path, kind: str) -> Path:
    """The hostile input `kind` in a folder of its own (fleet reads the folder)."""
    home = folder / kind
    home.mkdir()
    path = home / "input.json"
    if kind in CONTENTS:
        path.write_bytes(CONTENTS[kind])
    elif kind != "missing":
        special_file(path, kind)
    return path


COMMANDS: Dict[str, Callable[[Path, Path], List[str]]] = {
    "check-from": lambda bad, good: ["check", "--from", str(bad)],
    "check-policy": lambda bad, good: ["check", "--from", str(good), "--policy", str(bad)],
    "diff-first": lambda bad, good: ["diff", str(bad), str(good)],
    "diff-second": lambda bad, good: ["diff", str(good), str(bad)],
    "inspect": lambda bad, good: ["inspect", str(bad)],
    "fix-from": lambda bad, good: ["fix", "--from", str(bad), "--threads"],
    "fix-rollback": lambda bad, good: ["fix", "--rollback", str(bad), "--yes"],
    "fleet-folder": lambda bad, good: ["fleet", "--reports", str(bad.parent)],
    "fleet-file": lambda bad, good: ["fleet", "--reports", str(bad), str(good)],
    "check-python": lambda bad, good: ["check", "--python", str(bad), "--no-probe", "--no-save"],
    "inspect-python": lambda bad, good: ["inspect", "--python", str(bad), str(good)],
}


@pytest.fixture(scope="module")
def good_report(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("good")
    run = run_envdoctor("check", "--no-probe", "--no-save", "--json", "report.json", cwd=folder)
    assert run.returncode in (0, 1), run
    return folder / "report.json"


@pytest.mark.parametrize("kind", [*CONTENTS, *SPECIAL])
def test_no_command_breaks_on_a_hostile_input(tmp_path, good_report, kind):
    bad = hostile(tmp_path, kind)
    broken = []
    for name, command in COMMANDS.items():
        run = run_envdoctor(*command(bad, good_report), cwd=tmp_path, timeout=60)
        if run.returncode not in (0, 1, 2) or "Traceback" in run.stderr + run.stdout:
            broken.append((name, run.returncode, run.stderr.strip().splitlines()[-1:]))
        elif run.returncode == 2:
            lines = run.stderr.strip().splitlines()
            if len(lines) != 1 or not lines[0].startswith("envdoctor: error:"):
                broken.append((name, 2, lines[:3]))
    assert broken == []


def test_a_quick_hostile_sample_through_the_real_command(tmp_path, good_report):
    """The same promise for the installed command as a process: a FIFO and a deep document."""
    for kind in ("fifo", "deep-json-list"):
        bad = hostile(tmp_path, kind)
        run = run_envdoctor("check", "--from", str(bad), cwd=tmp_path, child=True, timeout=60)
        assert run.returncode == 2 and "Traceback" not in run.stderr and run.stderr.count("\n") == 1, run
