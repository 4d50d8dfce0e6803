"""Escaping outside strings before they reach a terminal or a Markdown view.

Reports, model files and a program's output hold text nobody vetted: an OSC 52 sequence in a finding
title writes the reader's clipboard, a CSI sequence clears the screen, a bidi override makes a path read
backwards, a zero-width space makes two member names look alike. Every terminal and Markdown view passes
what it shows through `escaped` first, and every one-line message through `escape_control`, so such
characters appear as visible `\\x1b`-style escapes. JSON output stays raw data: json.dumps escapes them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

LINE_BREAKS = "\t\n"


def escape_control(text: str, multiline: bool = True) -> str:
    """`text` with every character Python does not call printable (controls, bidi and zero-width
    formatting, separators but the space) shown as its escape (`\\x1b`, `\\u202e`, `\\n`); tab and
    newline stay as they are in multi-line text (an explanation, an output tail) and are escaped in a
    single line."""
    if text.isprintable():
        return text
    kept = LINE_BREAKS if multiline else ""
    return "".join(ch if ch.isprintable() or ch in kept else repr(ch)[1:-1] for ch in text)


PLAIN = (int, float, bool, type(None))


def escaped(value: Any) -> Any:
    """A copy of `value` (a report, a comparison, a fleet view, or JSON-able data) whose strings,
    mapping keys included, are escaped; numbers, enums and None are kept. The exact JSON types are
    tried first: a report's facts are thousands of them, and the general tests below are slower."""
    kind = type(value)
    if kind is str:
        return escape_control(value)
    if kind is dict:
        return {escaped(k): escaped(v) for k, v in value.items()}
    if kind is list:
        return [escaped(v) for v in value]
    if kind in PLAIN:
        return value
    if isinstance(value, str):
        return escape_control(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: escaped(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init})
    if isinstance(value, Mapping):
        return {escaped(k): escaped(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(escaped(v) for v in value)
    return value
