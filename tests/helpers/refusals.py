"""A command refused as every command refuses bad input: exit code 2, one line on stderr, no traceback."""

from __future__ import annotations


def one_line_error(run) -> str:
    """The refusal's single stderr line, once exit code 2 and the absence of a traceback are asserted."""
    assert run.returncode == 2, run
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envdoctor: error:") and "Traceback" not in run.stderr, run
    return lines[0]
