"""Reading a policy file, strictly: every section, key and value is known and well-formed, or the file
is refused in one line that names the key. A typo must never turn a rule into no rule.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envdoctor.collect.environ import RELEVANT
from envdoctor.errors import UsageError
from envdoctor.files import read_regular
from envdoctor.model import Severity
from envdoctor.escape import escape_control

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

SIZE_LIMIT = 2**20  # a policy is a page of rules
SEVERITIES = ("info", "warning", "error")
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DISTRIBUTION = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
SIMPLE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class Invalid(Exception):
    """A value the policy format does not allow, with the dotted key it sits under."""

    def __init__(self, key: str, why: str):
        super().__init__(f"{key}: {why}" if key else why)


@dataclass(frozen=True)
class Section:
    """One table of the policy: its validated rules, how severe breaking them is, and the team's own
    remedy (shown before envdoctor's)."""

    name: str
    rules: Mapping[str, Any]
    severity: Severity = Severity.ERROR
    remedy: str = ""


@dataclass(frozen=True)
class Policy:
    """A validated policy file: `source` names it in findings; `sections` by table name."""

    source: str
    sections: Mapping[str, Section]

    def rule(self, section: str, key: str) -> Any:
        """The validated value of `section.key`, or None when the policy does not set it."""
        found = self.sections.get(section)
        return found.rules.get(key) if found else None


def shown(value: Any) -> str:
    """A rejected value on one short line."""
    text = ascii(value)
    return text if len(text) <= 40 else text[:37] + "..."


def key_path(*parts: str) -> str:
    return ".".join(part if SIMPLE_KEY.fullmatch(part) else ascii(part) for part in parts)


def text(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise Invalid(key, f"must be a string, not {shown(value)}")
    return value


def strings(value: Any, key: str) -> List[str]:
    if not isinstance(value, list):
        raise Invalid(key, f"must be a list of strings, not {shown(value)}")
    return [text(item, f"{key}[{index}]") for index, item in enumerate(value)]


def version(value: Any, key: str) -> str:
    """A version as written (`580.65.06`, `2.5.1+cu124`); a bare driver branch may be an integer."""
    written = str(value) if isinstance(value, int) and not isinstance(value, bool) else text(value, key)
    try:
        Version(written)
    except InvalidVersion:
        raise Invalid(key, f"{shown(written)} is not a version") from None
    return written


def builds(value: Any, key: str) -> Tuple[str, ...]:
    written = strings(value, key)
    if not written:
        raise Invalid(key, "names no build; list at least one, e.g. [\"2.5.1+cu124\"]")
    return tuple(version(item, f"{key}[{index}]") for index, item in enumerate(written))


def variables(value: Any, key: str) -> Tuple[Tuple[str, Optional[str]], ...]:
    """NAME (set, any value) or NAME=VALUE entries; NAME must be a variable envdoctor records."""
    return tuple(variable(item, f"{key}[{index}]") for index, item in enumerate(strings(value, key)))


def variable(entry: str, key: str) -> Tuple[str, Optional[str]]:
    name, equals, wanted = entry.partition("=")
    if not VARIABLE.fullmatch(name):
        raise Invalid(key, f"{shown(entry)} is not NAME or NAME=VALUE")
    if not RELEVANT.match(name):
        raise Invalid(key, f"{name} is not among the variables envdoctor records, so it cannot be judged")
    return name, (wanted if equals else None)


def gigabytes(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise Invalid(key, f"must be a positive number of GiB, not {shown(value)}")
    return float(value)


def requirements(value: Any, key: str) -> Tuple[Tuple[str, str], ...]:
    """Distribution name = version specifier ("" for any version), e.g. numpy = ">=1.26,<2"."""
    if not isinstance(value, dict) or not value:
        raise Invalid(key, f"must be a table of package = \"specifier\", not {shown(value)}")
    return tuple(requirement(name, spec, f"{key}.{key_path(name)}") for name, spec in value.items())


def requirement(name: str, spec: Any, key: str) -> Tuple[str, str]:
    if not DISTRIBUTION.fullmatch(name):
        raise Invalid(key, "is not a package name")
    try:
        SpecifierSet(text(spec, key))
    except InvalidSpecifier:
        raise Invalid(key, f"{shown(spec)} is not a version specifier (e.g. \">=1.26,<2\")") from None
    return canonicalize_name(name), spec


Validator = Callable[[Any, str], Any]
SECTIONS: Dict[str, Dict[str, Validator]] = {
    "torch": {"builds": builds},
    "driver": {"min_version": version},
    "env": {"required": variables, "forbidden": variables},
    "memory": {"min_free_vram_gb": gigabytes, "min_available_ram_gb": gigabytes, "min_free_shm_gb": gigabytes},
    "packages": {"require": requirements},
}


def severity(value: Any, key: str) -> Severity:
    if value not in SEVERITIES:
        raise Invalid(key, f"must be one of {', '.join(SEVERITIES)}, not {shown(value)}")
    return Severity(value)


def section(name: str, table: Any) -> Section:
    if name not in SECTIONS:
        raise Invalid(key_path(name), f"unknown section (known: {', '.join(SECTIONS)})")
    if not isinstance(table, dict):
        raise Invalid(name, f"must be a table, not {shown(table)}")
    known = SECTIONS[name]
    unknown = [key for key in table if key not in known and key not in ("severity", "remedy")]
    if unknown:
        raise Invalid(key_path(name, unknown[0]), f"unknown key (known: {', '.join([*known, 'severity', 'remedy'])})")
    rules = {key: known[key](value, f"{name}.{key}") for key, value in table.items() if key in known}
    if not rules:
        raise Invalid(name, f"sets no rule (one of: {', '.join(known)})")
    return Section(
        name=name,
        rules=rules,
        severity=severity(table.get("severity", "error"), f"{name}.severity"),
        remedy=text(table.get("remedy", ""), f"{name}.remedy"),
    )


def parse(document: Mapping[str, Any], source: str) -> Policy:
    """The policy in a parsed TOML document; Invalid naming the first key that is wrong."""
    if not document:
        raise Invalid("", f"sets no rule; add one of the sections {', '.join(SECTIONS)}")
    return Policy(source=source, sections={name: section(name, table) for name, table in document.items()})


def load(path: Path) -> Policy:
    """The policy in the TOML file `path`; UsageError `PATH: KEY: why` in one line when it cannot be
    read or breaks the format."""
    try:
        raw = read_regular(Path(path), SIZE_LIMIT, "a policy file", UsageError)
        return parse(tomllib.loads(raw.decode("utf-8")), str(path))
    except UnicodeDecodeError:
        raise refusal(path, "not UTF-8 text") from None
    except tomllib.TOMLDecodeError as error:
        raise refusal(path, f"not valid TOML: {error}") from None
    except RecursionError:
        raise refusal(path, "nested deeper than any policy") from None
    except Invalid as error:
        raise refusal(path, str(error)) from None
    except UsageError as error:
        raise UsageError(escape_control(str(error), multiline=False)) from None


def refusal(path: Path, why: str) -> UsageError:
    return UsageError(escape_control(f"{path}: {why}", multiline=False))
