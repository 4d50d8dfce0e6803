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
