"""Options and output plumbing shared by the commands."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Optional

import click

from envdoctor.errors import UsageError

STDOUT = "-"


def resolve_python(value: Optional[str]) -> str:
    """The interpreter to diagnose: a path, a name on PATH, or a virtual environment's folder."""
    if not value:
        return sys.executable
    path = Path(value).expanduser()
    if path.is_dir():
        for candidate in (path / "bin" / "python", path / "Scripts" / "python.exe"):
            if candidate.is_file():
                return str(candidate.absolute())
        raise UsageError(f"--python {value}: a folder without bin/python; give the interpreter's path")
    if os.sep not in value and not path.exists():
        found = shutil.which(value)
        if found:
            return found
    if not path.is_file():
        raise UsageError(f"--python {value}: no such interpreter")
    if not os.access(path, os.X_OK):
        raise UsageError(f"--python {value}: not executable")
    return str(path.absolute())


def write_output(text: str, target: str) -> None:
    """Write `text` to the file `target`, or to stdout when it is "-"."""
    if target == STDOUT:
        click.echo(text, nl=False)
        return
    try:
        Path(target).write_text(text, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"cannot write {target}: {error.strerror or error}") from None


def emit(subject, json_out: Optional[str], markdown_out: Optional[str], verbose: bool, *, json, markdown, terminal) -> None:
    """Write `subject` in the requested formats with the given renderers; the terminal view goes to
    stdout unless stdout already carries one of the formats."""
    if json_out:
        write_output(json(subject), json_out)
    if markdown_out:
        write_output(markdown(subject), markdown_out)
    if STDOUT not in (json_out, markdown_out):
        click.echo(terminal(subject, verbose=verbose, color=use_color()), nl=False)


def use_color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def output_options(function):
    """--json PATH|- and --markdown PATH|-, for every command that produces a report."""
    function = click.option("--markdown", "markdown_out", metavar="PATH|-", help="Write Markdown for a GitHub issue.")(function)
    function = click.option("--json", "json_out", metavar="PATH|-", help="Write the JSON report.")(function)
    return function
