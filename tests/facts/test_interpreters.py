"""Interpreters that cannot be diagnosed: every command that takes --python refuses them in one line,
exit 2, with the reason and the way out, and runs nothing else.

Real things where this machine has them (/bin/ls, a venv whose base interpreter was removed, pyenv's
own Python 2.7 and 3.7); small scripts where it cannot (a pyenv shim printing pyenv's message, a
Python 2.7 that answers only --version, a PyPy).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, List, Tuple

import pytest

from conftest import run_envdoctor
from envdoctor.interpreter import IDENTITY_MARK, IDENTITY_PROGRAM

PYENV_MESSAGE = """pyenv: {command}: command not found

The `{command}' command exists in these Python versions:
{versions}

Note: See 'pyenv help global' for tips on allowing multiple
      Python versions to be found at the same time.
"""
PYENV_VERSIONS = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
COMMANDS = {
    "check": lambda python, folder: ("check", "--no-save", "--python", python),
    "inspect": lambda python, folder: ("inspect", str(folder / "model.zip"), "--python", python),
    "fix": lambda python, folder: ("fix", "--threads", "--python", python),
}


def script(path: Path, body: str, mode: int = 0o755) -> Path:
    """A shell script that notes each start in `calls` beside it, then runs `body`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "$*" >> {path.parent / "calls"}\n{body}\n')
    path.chmod(mode)
    return path


def pyenv_shim(folder: Path, versions: List[str]) -> Tuple[Path, List[str]]:
    """An inactive pyenv shim in a pyenv root of its own whose versions/ holds the first named version."""
    root = folder / "pyenv"
    message = PYENV_MESSAGE.format(command="python3.12", versions="\n".join(f"  {v}" for v in versions))
    (root / "message").parent.mkdir(parents=True, exist_ok=True)
    (root / "message").write_text(message)
    installed = root / "versions" / versions[0] / "bin" / "python3.12"
    installed.parent.mkdir(parents=True)
    installed.symlink_to(sys.executable)
    shim = script(root / "shims" / "python3.12", f"cat {root / 'message'} >&2\nexit 127")
    return shim, ["pyenv: python3.12: command not found"]


def inactive_shim(folder: Path):
    shim, parts = pyenv_shim(folder, ["3.12.1"])
    return str(shim), parts + ["pyenv has it in Python 3.12.1", "`pyenv shell 3.12.1`", "`pyenv global 3.12.1`",
                               f"--python {folder / 'pyenv' / 'versions' / '3.12.1' / 'bin' / 'python3.12'}"]


def shim_of_old_python(folder: Path):
    shim, parts = pyenv_shim(folder, ["2.7.18"])
    return str(shim), parts + ["only in Python 2.7.18", "envdoctor diagnoses Python 3.8 and newer"]


def not_python(folder: Path):
    return "/bin/ls", ["/bin/ls does not start as Python (exited with 2)", "/bin/ls: cannot access … No such file"]  # not the question it quoted back


def dangling_venv(folder: Path):
    """A real venv made by a base interpreter that was then removed (its link chain ends nowhere)."""
    base = folder / "base" / "bin" / "python3.11"
    base.parent.mkdir(parents=True)
    base.symlink_to(os.path.realpath(sys.executable))
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
    shutil.rmtree(folder / "base")
    venv = folder / "venv"
    return str(venv), [f"{venv / 'bin' / 'python'} is a broken link to {base}", f"recreate the venv ({base.name} -m venv --clear {venv})"]


def fake_python2(folder: Path):
    """Answers --version as Python 2.7 does (on stderr) and fails on Python 3 code like it."""
    fake = script(folder / "python2.7", 'if [ "$1" = --version ]; then echo "Python 2.7.18" >&2; exit 0; fi\n'
                                        'echo "SyntaxError: invalid syntax" >&2; exit 1')
    return str(fake), [f"{fake} is Python 2.7.18; envdoctor diagnoses Python 3.8 and newer"]


def fake_pypy(folder: Path):
    fake = script(folder / "pypy3", f"""echo; echo '{IDENTITY_MARK}["PyPy", [3, 10, 14]]'""")  # as the identity program prints
    return str(fake), [f"{fake} is PyPy 3.10.14; envdoctor diagnoses CPython 3.8 and newer"]


def not_executable(folder: Path):
    return str(script(folder / "python3", "exit 0", mode=0o644)), ["not executable"]


def without_interpreter_line(folder: Path):
    path = folder / "python3"
    path.write_text("print('no #! line')\n")
    path.chmod(0o755)
    return str(path), [f"{path} cannot be started", "Exec format error"]


def real_pyenv(version: str, executable: str) -> Callable:
    def make(folder: Path):
        path = PYENV_VERSIONS / version / "bin" / executable
        return str(path), [f"{path} is Python {version}; envdoctor diagnoses Python 3.8 and newer"]
    make.__name__ = f"real_python_{version}"
    return pytest.param(make, marks=pytest.mark.skipif(not (PYENV_VERSIONS / version / "bin" / executable).is_file(), reason=f"no pyenv Python {version} here"))


INTERPRETERS = [
    inactive_shim, shim_of_old_python, not_python, dangling_venv, fake_python2, fake_pypy, not_executable,
    without_interpreter_line, real_pyenv("2.7.18", "python2.7"), real_pyenv("3.7.16", "python3.7"),
]


def starts(folder: Path) -> List[str]:
    calls = [p for p in folder.rglob("calls")]
    return [line for path in calls for line in path.read_text().splitlines()]


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("make", INTERPRETERS, ids=lambda make: make.__name__)
def test_every_command_refuses_an_interpreter_it_cannot_diagnose_in_one_line(tmp_path, command, make):
    python, parts = make(tmp_path)
    (tmp_path / "model.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    work = tmp_path / "work"
    work.mkdir()
    run = run_envdoctor(*COMMANDS[command](python, tmp_path), cwd=work, timeout=120)
    assert run.returncode == 2, run
    assert run.stderr.count("\n") == 1 and run.stderr.startswith(f"envdoctor: error: --python {python}: "), run
    assert "Traceback" not in run.stderr
    for part in parts:
        assert part in run.stderr, run
    assert run.stdout == ""
    assert list(work.iterdir()) == []  # no report saved, no fix record
    assert len(starts(tmp_path)) <= 2  # the question and, for a failed one, its --version


def test_a_good_interpreter_is_asked_once_and_then_diagnosed(tmp_path):
    """A wrapper that notes each start of the real interpreter: one question, then the usual children."""
    wrapper = script(tmp_path / "python3", f'exec {sys.executable} "$@"')
    run = run_envdoctor("check", "--no-save", "--no-probe", "--only", "wsl", "--python", str(wrapper), "--json", "-", cwd=tmp_path)
    assert run.returncode == 0, run
    assert run.json()["target_python"] == str(wrapper)
    questions = [line for line in starts(tmp_path) if line == f"-B -c {IDENTITY_PROGRAM}"]
    assert len(questions) == 1, starts(tmp_path)
    assert len(starts(tmp_path)) > 1  # the target's facts were read through it too


def test_every_look_at_the_interpreter_writes_no_bytecode(tmp_path):
    """Each start of the diagnosed interpreter by check (its identity, its facts) runs with -B: the
    doctor's look leaves no __pycache__ in the user's environment."""
    first_arguments = tmp_path / "first-arguments"
    wrapper = script(tmp_path / "python3", f'echo "$1" >> {first_arguments}; exec {sys.executable} "$@"')
    run = run_envdoctor("check", "--no-save", "--no-probe", "--python", str(wrapper), "--json", "-", cwd=tmp_path)
    assert run.returncode in (0, 1), run
    assert set(first_arguments.read_text().splitlines()) == {"-B"}, first_arguments.read_text()


@pytest.mark.parametrize("name", ["py\nthon", "py\x1b]52;c;aGk=\x07thon", "py\u202ethon"], ids=["newline", "osc52", "bidi"])
def test_a_hostile_name_stays_one_escaped_line(tmp_path, name):
    shim, _ = pyenv_shim(tmp_path, ["3.12.1"])
    hostile = tmp_path / name
    hostile.symlink_to(shim)
    run = run_envdoctor("check", "--no-save", "--python", str(hostile), cwd=tmp_path)
    assert run.returncode == 2, run
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("envdoctor: error: --python "), run
    assert not any(c in run.stderr[:-1] for c in "\n\x1b\x07\u202e")
    assert "pyenv: python3.12: command not found" in run.stderr
