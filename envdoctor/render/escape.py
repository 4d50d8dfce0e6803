"""Escaping outside strings before they reach a terminal or a Markdown view.

Reports, model files and a program's output hold text nobody vetted: an OSC 52 sequence in a finding
title writes the reader's clipboard, a CSI sequence clears the screen, a bidi override makes a path read
backwards. Every terminal and Markdown view passes what it shows through `escaped` first, so such
characters appear as visible `\\x1b`-style escapes. JSON output stays raw data: json.dumps escapes them.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Mapping

# C0 controls but tab and newline, DEL, C1 controls, and the bidi embeddings, overrides and isolates.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
LINE_BREAKS = re.compile("[\t\n]")


def visible(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_control(text: str, multiline: bool = True) -> str:
    """`text` with every control character shown as an escape; tab and newline stay as they are in
    multi-line text (an explanation, an output tail) and are escaped in a single line."""
    text = CONTROL.sub(visible, text)
    return text if multiline else LINE_BREAKS.sub(visible, text)


def escaped(value: Any) -> Any:
    """A copy of `value` (a report, a comparison, a fleet view, or JSON-able data) whose strings,
    mapping keys included, are escaped; numbers, enums and None are kept."""
    if isinstance(value, str):
        return escape_control(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: escaped(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init})
    if isinstance(value, Mapping):
        return {escaped(k): escaped(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(escaped(v) for v in value)
    return value
