"""The end of every command's --help: its exit codes and one example, in one shape.

A script that calls envdoctor needs to know what a status means, and a reader learns a command fastest
from one real invocation. The codes every command shares (bad usage, a bug, Ctrl-C) are added here,
once, so no command's help can leave them out.
"""

from __future__ import annotations

from typing import Sequence, Tuple

SHARED_EXITS = (
    ("2", "bad usage or unreadable input: one line on stderr, never a traceback"),
    ("3", "a bug in envdoctor (please report it with the command line)"),
    ("130", "interrupted (Ctrl-C)"),
)

# check and inspect: the status a CI job or a wrapper script branches on.
FAIL_ON_EXITS = (("0", "no finding at or above --fail-on"), ("1", "findings at or above --fail-on"))


def epilog(exits: Sequence[Tuple[str, str]], example: str) -> str:
    """click epilog text: the command's own exit codes, the shared ones, then `example`. `\\b` keeps
    click from rewrapping the columns."""
    rows = (*exits, *SHARED_EXITS)
    width = max(len(code) for code, _ in rows)
    codes = "\n".join(f"  {code.ljust(width)}  {meaning}" for code, meaning in rows)
    return f"\b\nExit codes:\n{codes}\n\n\b\nExample:\n  {example}"
