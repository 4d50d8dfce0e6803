"""Typed views over a report's facts: one frozen dataclass per collector section.

The JSON sections stay the storage format (so `--from`, `diff` and `fleet` read old reports); a view is
what code reads. `read(facts, View)` answers the view, or `Unrecorded` when the section is missing, its
collector failed with `{"error": ...}`, or it holds something of the wrong shape where the view looks:
shape problems are caught once, in `View.from_json`, never by the readers of a view.

Building views is cheap when many checks judge one set of facts: the runner hands the checks a `CachedFacts`
mapping, which behaves as the raw dict (plugins keep their `function(facts_mapping)` contract) and
keeps each view it built, so sixty checks build each view once. A plain dict works too, uncached.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, Mapping, Optional, Type, TypeVar, Union

RawFacts = Mapping[str, Any]
View = TypeVar("View")
# What reading a recorded report's facts of the wrong shape raises (a number where text is expected, ...).
UNUSABLE = (TypeError, KeyError, ValueError, AttributeError, IndexError)


@dataclass(frozen=True)
class Unrecorded:
    """The facts do not record what a view needs: `reason` says so in the words of `diff`; `section`,
    `failure` (the collector's error) and `shape` (the error a wrong shape raised) let other readers
    word it their own way."""

    reason: str
    section: str = ""
    failure: Optional[str] = None
    shape: Optional[str] = None


class UnusableFacts(ValueError):
    """A view or a field of one that the facts cannot give; the runner shows it as the check's crash,
    and `unrecorded` says why in the words of `diff`."""

    def __init__(self, unrecorded: Unrecorded):
        super().__init__(unrecorded.reason)
        self.unrecorded = unrecorded


def section(facts: RawFacts, name: str) -> Union[Mapping[str, Any], Unrecorded]:
    """The section `name`, or Unrecorded when it is missing, not a mapping, or its collector failed."""
    found = facts.get(name)
    if not isinstance(found, Mapping):
        return Unrecorded(f"no {name} facts in the report", name)
    if "error" in found:
        return Unrecorded(f"{name} facts failed: {found['error']}", name, failure=str(found["error"]))
    return found


def first_unrecorded(facts: RawFacts, names: Iterable[str]) -> Optional[Unrecorded]:
    """Why the first of the sections `names` is not usable, or None when every one is."""
    return next((found for found in (section(facts, name) for name in names) if isinstance(found, Unrecorded)), None)


def unusable(what: str, error_name: str) -> str:
    return f"{what} of an unexpected shape in the report ({error_name})"


def misshapen(name: str, error: Exception) -> Unrecorded:
    kind = type(error).__name__
    return Unrecorded(unusable(f"{name} facts", kind), name, shape=kind)


def shaped(name: str, build: Callable[[], View]) -> Union[View, Unrecorded]:
    """What `build` makes of the section `name`, or Unrecorded when the section has the wrong shape."""
    try:
        return build()
    except UNUSABLE as error:
        return misshapen(name, error)


def field(name: str, value: Any, kind: Union[type, tuple], default: Any) -> Any:
    """A field checked when it is read, for a field whose wrong shape must spoil only its own readers
    (a check that reads it crashes, the others judge the rest of the section): UnusableFacts if wrong."""
    try:
        return expect(value, kind, default)
    except TypeError as error:
        raise UnusableFacts(misshapen(name, error)) from None


def expect(value: Any, kind: Union[type, tuple], default: Any = None) -> Any:
    """`value` when it is a `kind` (None gives `default`); TypeError otherwise, which from_json turns into Unrecorded."""
    if value is None and default is not None:
        return default
    if not isinstance(value, kind):
        raise TypeError(f"{type(value).__name__} where {kind} was expected")
    return value


def whole(value: Any) -> Optional[int]:
    """A count: an int (not a bool), or None; TypeError for anything else."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise TypeError(f"{type(value).__name__} where a count was expected")
    return value


class CachedFacts(Mapping):
    """The raw facts, read as a mapping, with the views built from them kept for the next reader."""

    def __init__(self, raw: RawFacts):
        self.raw = raw
        self.views: Dict[type, Any] = {}

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    def view(self, kind: type) -> Any:
        if kind not in self.views:
            self.views[kind] = build(self.raw, kind)
        return self.views[kind]


def build(facts: RawFacts, kind: Type[View]) -> Union[View, Unrecorded]:
    found = section(facts, kind.SECTION)  # type: ignore[attr-defined]
    return found if isinstance(found, Unrecorded) else kind.from_json(found)  # type: ignore[attr-defined]


def read(facts: RawFacts, kind: Type[View]) -> Union[View, Unrecorded]:
    """The `kind` view of these facts (kept when `facts` is a `CachedFacts`), or Unrecorded."""
    return facts.view(kind) if isinstance(facts, CachedFacts) else build(facts, kind)


def view_of(facts: RawFacts, kind: Type[View]) -> View:
    """The view as a check or a planner reads it: the view of an empty section where the section is
    missing or its collector failed (what `requires` does not promise is read as absent); a section of
    the wrong shape raises UnusableFacts, which the runner shows as the check's crash."""
    found = read(facts, kind)
    if not isinstance(found, Unrecorded):
        return found
    if found.shape:
        raise UnusableFacts(found)
    return kind.from_json({})  # type: ignore[attr-defined]
