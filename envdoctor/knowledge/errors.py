"""The error messages the ML stack raises and what each one says (errors.csv): read the error before guessing.

A user's failure usually states its cause in its own words: torch.load refusing a file under its
`weights_only` default, a checkpoint saved on a GPU loaded where CUDA is absent, an environment of
the old gym API, a full /dev/shm, a stale PYTHONHOME. Each row pairs a message pattern with the cause
it states, how sure the message makes it (confirmed: it says the cause; likely: it names a class of
causes), the envdoctor findings that explain it further, a remedy, and where the message comes from
(the library line that raises it, or an issue thread where users hit it; docs/knowledge/error-messages.md §1).
Rows are tried in file order, most specific first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Tuple

from envdoctor.knowledge import optional, rows, words

CONFIDENCES = ("confirmed", "likely")


@dataclass(frozen=True)
class KnownError:
    """One row: the message's pattern and what it says."""

    kind: str
    pattern: "re.Pattern[str]"
    confidence: str
    cause: str
    findings: Tuple[str, ...]
    remedy: str
    command: Optional[str]
    sources: Tuple[str, ...]
    explains: Tuple[str, ...] = ()  # the kinds of error this message, printed before them, is the cause of

    def named(self, text: str) -> Optional[str]:
        """What a matching `text` names (the pattern's first group that matched), or None."""
        match = self.pattern.search(text)
        return next((g for g in match.groups() if g), None) if match else None


@lru_cache(maxsize=None)
def known_errors() -> Tuple[KnownError, ...]:
    table = []
    for row in rows("errors.csv"):
        if row["confidence"] not in CONFIDENCES:
            raise ValueError(f"errors.csv: {row['kind']} has confidence {row['confidence']!r}")
        table.append(KnownError(
            kind=row["kind"],
            pattern=re.compile(row["pattern"], re.MULTILINE),
            confidence=row["confidence"],
            cause=row["cause"],
            findings=words(row["findings"]),
            remedy=row["remedy"],
            command=optional(row["command"]),
            sources=words(row["source"]),
            explains=words(row["explains"]),
        ))
    return tuple(table)


def matching(text: str) -> Optional[KnownError]:
    """The first row whose pattern occurs in `text`, or None."""
    return next((row for row in known_errors() if row.pattern.search(text or "")), None)


def explained_by(found: KnownError, text: str) -> Optional[KnownError]:
    """The row of a message in `text` that is the cause of `found`'s (it explains `found.kind`), or None."""
    return next((row for row in known_errors() if found.kind in row.explains and row.pattern.search(text or "")), None)


def by_kind(kind: str) -> Optional[KnownError]:
    return next((row for row in known_errors() if row.kind == kind), None)
