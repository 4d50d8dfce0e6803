"""Whether an interpreter named by `--python` is one envdoctor can diagnose, asked once before anything runs it.

An inactive pyenv shim, a venv whose base interpreter was removed, a program that is not Python or a
Python older than 3.8 fails inside every collector and the probe alike; judged as an environment it
reads as "Python ?", "no problems found" or a probe crash to attach to a ticket. One cheap start
tells which of these it is, and the user gets the reason and the way out in one line instead.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import List, Optional, Tuple, Union

from envdoctor.errors import UsageError
from envdoctor.escape import escape_control
from envdoctor.proc.children import NO_BYTECODE, ChildResult, run_child

OLDEST = (3, 8)
START_LIMIT_S = 20.0  # a cold start on a slow disk takes seconds; a hang is refused, not waited on
# Valid Python 2 and 3 both, so an old interpreter answers with its version instead of a SyntaxError; the
# answer follows a marker on a line of its own, so whatever the interpreter printed as it started (a .pth
# file, a sitecustomize) cannot run into it.
IDENTITY_MARK = "envdoctor-identity:"
IDENTITY_PROGRAM = (
    "import json, platform, sys; "
    f"print(''); print('{IDENTITY_MARK}' + json.dumps([platform.python_implementation(), list(sys.version_info[:3])]))"
)
VERSION_LINE = re.compile(r"^Python (\d+)\.(\d+)(?:\.(\d+))?", re.MULTILINE)
PYENV_NOT_FOUND = re.compile(r"^pyenv: (\S+): command not found")
PYENV_VERSIONS = re.compile(r"exists in these Python versions:\n((?:[ \t]+\S+\n?)+)")


@dataclass(frozen=True)
class Identity:
    implementation: str
    version: Tuple[int, ...]

    @property
    def shown(self) -> str:
        return f"{'Python' if self.implementation == 'CPython' else self.implementation} {'.'.join(map(str, self.version))}"


def checked(value: str, path: Path) -> str:
    """The absolute path of `path` (what `--python value` names) once it is known to start as a
    CPython envdoctor diagnoses; otherwise a UsageError with the reason and the way out."""
    refuse_unrunnable(value, path)
    absolute = str(path.absolute())
    refuse_unsupported(value, absolute, identity(absolute))
    return absolute


def refusal(value: str, why: str) -> UsageError:
    """The one-line refusal; a path may hold a newline or an escape sequence, shown escaped."""
    return UsageError(escape_control(f"--python {value}: {why}", multiline=False))


def refuse_unrunnable(value: str, path: Path) -> None:
    if path.is_symlink() and not path.exists():
        raise refusal(value, f"{path} is a broken link to {os.path.realpath(path)}; {recreate(path)}")
    if not path.exists():
        raise refusal(value, "no such interpreter")
    if not path.is_file():
        raise refusal(value, "not a file; give the interpreter's path or a venv folder")
    if not os.access(path, os.X_OK):
        raise refusal(value, "not executable")


def recreate(link: Path) -> str:
    """The way out for a venv whose base interpreter is gone: a new venv from one that exists."""
    venv = link.absolute().parent.parent
    if not (venv / "pyvenv.cfg").is_file():
        return "its interpreter is gone; name one that exists"
    base = Path(os.path.realpath(link)).name
    maker = base if re.fullmatch(r"python3(\.\d+)?", base) else "python3"
    return f"the venv's base interpreter is gone; recreate the venv ({maker} -m venv --clear {venv}) and reinstall its packages"


@lru_cache(maxsize=None)
def identity(path: str) -> Union[Identity, ChildResult]:
    """What `path` says it is (an Identity), or how its start failed (a ChildResult); asked once per
    path within a command."""
    result = run_child([path, NO_BYTECODE, "-c", IDENTITY_PROGRAM], timeout=START_LIMIT_S)
    return answered(result) or result


def answered(result: ChildResult) -> Optional[Identity]:
    if not result.ok:
        return None
    try:
        name, version = json.loads(result.stdout.rsplit(IDENTITY_MARK, 1)[1])
        return Identity(str(name), tuple(int(part) for part in version))
    except (ValueError, TypeError, IndexError):
        return None


def refuse_unsupported(value: str, path: str, found: Union[Identity, ChildResult]) -> None:
    if not isinstance(found, Identity):
        raise refusal(value, not_started(path, found))
    if found.implementation != "CPython":
        raise refusal(value, f"{path} is {found.shown}; envdoctor diagnoses CPython {dotted(OLDEST)} and newer")
    if found.version[:2] < OLDEST:
        raise refusal(value, too_old(path, found.shown))


def too_old(path: str, shown: str) -> str:
    return f"{path} is {shown}; envdoctor diagnoses Python {dotted(OLDEST)} and newer: name a newer interpreter or its venv folder"


def dotted(version: Tuple[int, ...]) -> str:
    return ".".join(map(str, version))


# The identity program as a program that echoes its arguments quotes it back (`ls: cannot access '...'`).
ECHOED_PROGRAM = re.compile(r"\S*import json, platform, sys.*version_info\[:3\]\)\]\)\)\S*")


def not_started(path: str, result: ChildResult) -> str:
    """Why `path` did not answer as Python, in one line: an old Python by its own `--version`, the
    first line of what it said, and for a pyenv shim the versions it names and how to switch to one."""
    if result.start_error:
        return f"{path} cannot be started: {result.start_error}"
    if result.timed_out:
        return f"{path} did not answer within {START_LIMIT_S:.0f} s as a Python interpreter would"
    old = version_answer(path)
    if old and old[:2] < OLDEST:
        return too_old(path, f"Python {dotted(old)}")
    said = ECHOED_PROGRAM.sub("…", telling_line(result.stderr) or telling_line(result.stdout))
    ending = result.describe() if result.returncode else "it printed no Python version"
    return f"{path} does not start as Python ({ending}){': ' + said if said else ''}{pyenv_way_out(path, result.stderr)}"


def version_answer(path: str) -> Optional[Tuple[int, ...]]:
    """The version `path --version` names (Python 2 says it on stderr), or None."""
    result = run_child([path, "--version"], timeout=START_LIMIT_S)
    match = VERSION_LINE.search(result.stdout + "\n" + result.stderr)
    return tuple(int(part) for part in match.groups() if part) if match else None


def telling_line(text: str) -> str:
    """The line of an interpreter's failure that says what failed: a traceback's last line (the
    exception), else the first line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    said = lines[-1] if any(line.startswith("Traceback (most recent call last)") for line in lines) else lines[0]
    return escape_control(said[:300], multiline=False)


def pyenv_way_out(path: str, stderr: str) -> str:
    """For a shim of a version pyenv has but has not activated: the versions, and the commands that activate one."""
    command = PYENV_NOT_FOUND.match(stderr.strip())
    versions = shim_versions(stderr)
    if not command or not versions:
        return ""
    supported = [v for v in versions if version_tuple(v)[:2] >= OLDEST]
    if not supported:
        return f"; pyenv has it only in Python {', '.join(versions)}, and envdoctor diagnoses Python {dotted(OLDEST)} and newer"
    chosen = supported[-1]
    installed = Path(path).parent.parent / "versions" / chosen / "bin" / command.group(1)
    direct = f", or give --python {installed}" if installed.is_file() else ""
    return f"; pyenv has it in Python {', '.join(versions)}: run `pyenv shell {chosen}` (or `pyenv global {chosen}`) first{direct}"


def version_tuple(text: str) -> Tuple[int, ...]:
    """(3, 12) for "3.12.1"; a pyenv name like "miniconda3-latest" or "pypy3.10-7.3" counts as (0,)."""
    match = re.match(r"(\d+)\.(\d+)", text)
    return tuple(int(part) for part in match.groups()) if match else (0,)


def shim_versions(stderr: str) -> List[str]:
    found = PYENV_VERSIONS.search(stderr.replace("\r", ""))
    return [escape_control(v, multiline=False) for v in found.group(1).split()] if found else []
