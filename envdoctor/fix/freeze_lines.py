"""One line of `pip freeze` or `uv pip freeze`, read as a requirement, never as shell words.

A freeze line names one distribution in one of a few forms: `name==1.0`, `name===1.0.local`, `name @ URL`
(a local wheel, a URL or VCS install, most conda packages), `-e URL#egg=name` or `-e /path` (editable),
possibly with an environment marker. A rollback gives each line to the installer as exactly one
argument (or `-e` and one), so a URL or a path with spaces stays whole and no line of a record can
become an installer option.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Tuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

# pip's rule for requirement lines: `#` at the start or after whitespace begins a comment; `#egg=` in a URL does not.
COMMENT = re.compile(r"(^|\s+)#.*$")
EDITABLE = re.compile(r"^(?:-e|--editable)(?:\s+|=)(?P<target>.+)$")
EGG = re.compile(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)")
# Older pips froze versions that are not PEP 440 (`0.1dev-r1234`); packaging no longer parses them.
LEGACY_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==[^\s;@,<>=!~]+$")


@dataclass(frozen=True)
class FreezeLine:
    """A requirement as the installer froze it: its text, the distribution it is about, and how to install it."""

    text: str
    key: str
    args: Tuple[str, ...]

    @property
    def editable_without_name(self) -> bool:
        """`-e /path` names no distribution, so it is its own key and never a name to uninstall."""
        return self.key == self.text


def parse(line: str) -> Optional[FreezeLine]:
    """The requirement on `line`; None for a blank or comment line; ValueError for anything else."""
    text = COMMENT.sub("", line).strip()
    if not text:
        return None
    editable = EDITABLE.match(text)
    if editable:
        return parse_editable(editable.group("target").strip())
    if text.startswith("-"):
        raise ValueError("an installer option, not a requirement")
    return FreezeLine(text, canonicalize_name(requirement_name(text)), (text,))


def requirement_name(text: str) -> str:
    try:
        return Requirement(text).name
    except InvalidRequirement:
        legacy = LEGACY_PIN.match(text)
        if legacy is None:
            raise ValueError("not a requirement") from None
        return legacy.group("name")


def parse_editable(target: str) -> FreezeLine:
    if target.startswith("-"):
        raise ValueError("an editable install of an installer option")
    text = f"-e {target}"
    egg = EGG.search(target)
    return FreezeLine(text, canonicalize_name(egg.group(1)) if egg else text, ("-e", target))
