"""Options and output plumbing shared by the commands."""

from __future__ import annotations

import functools
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

from envdoctor import interpreter
from envdoctor.errors import UsageError

if TYPE_CHECKING:  # every command imports this module; only those that emit need the renderers
    from envdoctor.render.view import DocumentRenderer

STDOUT = "-"


def resolve_python(value: Optional[str]) -> str:
    """The interpreter to diagnose: a path, a name on PATH, or a virtual environment's folder; refused
    in one line unless it starts as a CPython envdoctor diagnoses."""
    if not value:
        return sys.executable
    return interpreter.checked(value, located(value))


def located(value: str) -> Path:
    """The file `--python value` names; a venv's link to a removed interpreter counts, so it can be named."""
    path = Path(value).expanduser()
    if path.is_dir():
        for candidate in (path / "bin" / "python", path / "Scripts" / "python.exe"):
            if candidate.is_file() or candidate.is_symlink():
                return candidate
        raise interpreter.refusal(value, "a folder without bin/python; give the interpreter's path")
    if os.sep not in value and not path.exists():
        found = shutil.which(value)
        if found:
            return Path(found)
    return path


def write_output(text: str, target: str) -> None:
    """Write `text` to the file `target` (created readable by its owner only), or to stdout when it is "-"."""
    if target == STDOUT:
        click.echo(text, nl=False)
        return
    try:
        with open(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as stream:
            stream.write(text)
    except OSError as error:
        raise UsageError(f"cannot write {target}: {error.strerror or error}") from None


class GuardedStdout:
    """stdout for a command's run. A closed, full or broken stdout loses the output, not the
    command's result: the first failed write is noted in one line on stderr, the rest of the output
    goes to the null device, and the command still ends with its own exit code."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")  # click probes for a text stream
        try:
            if self.stream is None:
                raise OSError(0, "it is closed")
            return self.stream.write(text)
        except (OSError, ValueError) as error:
            self.lost(error)
            return len(text)

    def flush(self) -> None:
        try:
            if self.stream is not None:
                self.stream.flush()
        except (OSError, ValueError) as error:
            self.lost(error)

    def isatty(self) -> bool:
        return self.stream is not None and self.stream.isatty()

    def __getattr__(self, name: str):
        return getattr(self.stream, name)

    def lost(self, error: Exception) -> None:
        """Note the loss, then point file descriptor 1 at the null device, so that what is still
        buffered, flushed at interpreter exit, fails no more."""
        note(f"envdoctor: output not written: standard output is unusable ({getattr(error, 'strerror', None) or error})")
        null = os.open(os.devnull, os.O_WRONLY)
        if self.stream is not None:
            try:
                os.dup2(null, self.stream.fileno())
            except (OSError, ValueError):
                pass
        self.stream = os.fdopen(null, "w", encoding="utf-8")


def note(line: str) -> None:
    """One line on stderr, or nothing when stderr is closed or broken too."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def emit(renderer: DocumentRenderer, json_out: Optional[str], markdown_out: Optional[str], verbose: bool) -> None:
    """Write what `renderer` shows in the requested formats; the terminal view goes to stdout unless
    stdout already carries one of the formats."""
    if json_out:
        write_output(renderer.json(), json_out)
    if markdown_out:
        write_output(renderer.markdown(), markdown_out)
    if STDOUT not in (json_out, markdown_out):
        click.echo(renderer.terminal(verbose=verbose, color=use_color()), nl=False)


def use_color() -> bool:
    return sys.stdout is not None and sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def output_options(function):
    """--json PATH|- and --markdown PATH|-, for every command that produces a report; both on
    stdout would make one stream of two documents no reader can split, so that is refused before
    anything runs."""

    @functools.wraps(function)
    def one_document_on_stdout(*args, **kwargs):
        if kwargs.get("json_out") == STDOUT and kwargs.get("markdown_out") == STDOUT:
            raise UsageError("--json - and --markdown - cannot both write to stdout; write one of them to a file")
        return function(*args, **kwargs)

    command = click.option("--markdown", "markdown_out", metavar="PATH|-", help="Write Markdown for a GitHub issue.")(one_document_on_stdout)
    return click.option("--json", "json_out", metavar="PATH|-", help="Write the JSON report.")(command)
