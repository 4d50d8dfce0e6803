"""One node's pass: its report read, bounded and validated, down to what the fleet keeps of it.

A fleet holds thousands of reports, so none is kept: a node is its aspect values (as `envdoctor diff`
reads them), its findings in brief, and the findings of any extra judge run on its facts (a site
policy). The report is untrusted: it is read no further than a report's size limit and nesting depth,
and the sections the fleet uses (facts, findings) are validated against the report schema. The rest of
the schema is not walked for each of thousands of reports; a report that fails the cheap check is
validated in full, so the reason the user reads is the same as every other reader gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple

from envdoctor import engine, schema
from envdoctor.compare.aspects import ASPECTS
from envdoctor.compare.readers import Value
from envdoctor.errors import ReportReadError
from envdoctor.facts import CachedFacts, RawFacts
from envdoctor.model import SCHEMA_VERSION, Finding, Severity

USED_SECTIONS = ("schema_version", "facts", "findings")
FINDING_FIELDS = ("id", "severity", "title")
FINDING_SHAPE_ERRORS = (TypeError, KeyError, ValueError)
# An extra verdict on each node's facts, such as a site policy's `judge` with its policy bound.
NodeJudge = Callable[[RawFacts], Sequence[Finding]]


@dataclass(frozen=True)
class Brief:
    """A finding as the fleet shows it: which check, how severe, and its title."""

    id: str
    severity: Severity
    title: str

    @classmethod
    def of(cls, finding: Finding) -> "Brief":
        return cls(finding.id, finding.severity, finding.title)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Brief":
        if not isinstance(data["id"], str) or not isinstance(data["title"], str):
            raise TypeError("a finding's id and title must be text")
        return cls(data["id"], Severity(data["severity"]), data["title"])

    def to_json(self) -> dict:
        return {"id": self.id, "severity": self.severity.value, "title": self.title}


@dataclass(frozen=True)
class NodeSource:
    """Where one node's report is, or why it has none; `about` holds what else is known of the node."""

    name: str
    path: Optional[Path]
    about: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True)
class NodeSummary:
    """What the fleet keeps of one node: values in ASPECTS order, findings, and the extra judge's findings."""

    source: NodeSource
    values: Tuple[Value, ...] = ()
    findings: Tuple[Brief, ...] = ()
    judged: Tuple[Brief, ...] = ()
    error: str = ""

    @property
    def name(self) -> str:
        return self.source.name


def cut(rule: Mapping[str, Any], kept: Sequence[str]) -> dict:
    """The object schema `rule` checking only its `kept` properties; its `required` list stays whole."""
    return {**rule, "properties": {key: rule["properties"][key] for key in kept}}


@lru_cache(maxsize=1)
def used_sections_validator():
    """The report schema cut down to what the fleet reads, compiled once per process: the facts, and of
    each finding its id, severity and title (a finding's evidence and remedies are most of its
    validation time, and the fleet never reads them)."""
    import jsonschema

    full = schema.report_schema()
    used = cut(full, USED_SECTIONS)
    used["required"] = [key for key in full["required"] if key in USED_SECTIONS]
    used["$defs"] = {**full["$defs"], "finding": cut(full["$defs"]["finding"], FINDING_FIELDS)}
    return jsonschema.Draft202012Validator(used)


def fits_used_sections(data: Any) -> bool:
    """Whether `data` is a report of this schema major whose used sections fit the schema."""
    if not isinstance(data, dict) or schema.major(data.get("schema_version")) != schema.major(SCHEMA_VERSION):
        return False
    try:
        return used_sections_validator().is_valid(data)
    except ImportError:  # without jsonschema, schema.validate does its structural check
        return False


def report_parts(path: Path) -> Tuple[RawFacts, Tuple[Brief, ...]]:
    """The facts and findings of the report at `path`; ReportReadError with one line when it is not one.

    The cut-down schema is a relaxation of the full one: what it refuses, the full validation refuses
    too and says where; what the full validation accepts is a sound report."""
    data = engine.parsed_json(path)
    if not fits_used_sections(data):
        schema.validate(data, source=str(path))
    try:
        return data["facts"], tuple(Brief.from_json(f) for f in data["findings"])
    except FINDING_SHAPE_ERRORS as error:  # only where jsonschema is missing and the check was structural
        raise ReportReadError(f"{path} is not a usable envdoctor report: {type(error).__name__}: {error}") from None


def aspect_values(facts: RawFacts) -> Tuple[Value, ...]:
    views = CachedFacts(facts)  # each section's view built once for all the aspects
    return tuple(aspect.read(views) for aspect in ASPECTS)


def without_path(message: str, path: Path) -> str:
    """A reader's one-line reason without the file's name, which the node's name already gives."""
    return message.replace(str(path), "the report", 1)


def summarize(source: NodeSource, judge: Optional[NodeJudge] = None) -> NodeSummary:
    """The node's summary, or the node with the reason its report cannot be read."""
    if source.path is None:
        return NodeSummary(source, error=source.error)
    try:
        facts, findings = report_parts(source.path)
    except ReportReadError as error:
        return NodeSummary(source, error=without_path(str(error), source.path))
    judged = tuple(Brief.of(f) for f in judge(facts)) if judge else ()
    return NodeSummary(source, aspect_values(facts), findings, judged)
