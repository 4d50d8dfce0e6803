"""The site's settings: each from its environment variable, else from the `[site]` table of the TOML
file named by ENVDOCTOR_SITE_CONFIG, else its default.

A bad setting raises ValueError naming it; envdoctor then reports the plugin as failed to load
(doctor.plugin-failed) rather than judging against a rule nobody meant.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from packaging.version import InvalidVersion, Version

from envdoctor.collect.environ import RELEVANT

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

CONFIG_VARIABLE = "ENVDOCTOR_SITE_CONFIG"
PREFIX = "ENVDOCTOR_SITE_"


@dataclass(frozen=True)
class Settings:
    """What the site standardised on; None leaves that rule out."""

    min_driver_branch: Optional[int] = None
    torch_build: Optional[str] = None
    checkpoint_dir: Optional[str] = None
    checkpoint_free_gb: float = 100.0
    forbidden_env: Tuple[str, ...] = ("LD_PRELOAD", "CUDA_LAUNCH_BLOCKING=1")


def number(value: Any, kind: Callable[[Any], Any]) -> float:
    """`value` as a number of `kind`, NaN when it is none (a bool, a word, a list)."""
    try:
        return kind(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        return math.nan


def branch(value: Any) -> int:
    major = number(value, int)
    if not major > 0:
        raise ValueError(f"must be a driver branch such as 550, not {value!r}")
    return int(major)


def build(value: Any) -> str:
    try:
        return str(Version(str(value)))
    except InvalidVersion:
        raise ValueError(f"must be a torch version such as 2.5.1+cu124, not {value!r}") from None


def folder(value: Any) -> str:
    path = str(value)
    if not os.path.isabs(path):
        raise ValueError(f"must be an absolute path, not {value!r}")
    return os.path.normpath(path)


def gigabytes(value: Any) -> float:
    size = number(value, float)
    if not math.isfinite(size) or size <= 0:
        raise ValueError(f"must be a positive number of GiB, not {value!r}")
    return size


def variables(value: Any) -> Tuple[str, ...]:
    """NAME or NAME=VALUE entries: a TOML list, or comma-separated in an environment variable."""
    entries = value.split(",") if isinstance(value, str) else value
    if not isinstance(entries, list) and not isinstance(entries, tuple):
        raise ValueError(f"must be a list of NAME or NAME=VALUE, not {value!r}")
    written = tuple(str(entry).strip() for entry in entries if str(entry).strip())
    unrecorded = [entry for entry in written if not RELEVANT.match(entry.partition("=")[0])]
    if unrecorded:
        raise ValueError(f"{unrecorded[0]!r} is not a variable envdoctor records, so it cannot be judged")
    return written


PARSERS: Dict[str, Callable[[Any], Any]] = {
    "min_driver_branch": branch,
    "torch_build": build,
    "checkpoint_dir": folder,
    "checkpoint_free_gb": gigabytes,
    "forbidden_env": variables,
}


def config_table(environ: Mapping[str, str]) -> Mapping[str, Any]:
    """The `[site]` table of the config file, {} without one."""
    path = environ.get(CONFIG_VARIABLE)
    if not path:
        return {}
    with open(path, "rb") as stream:
        table = tomllib.load(stream).get("site", {})
    unknown = sorted(set(table) - set(PARSERS))
    if unknown:
        raise ValueError(f"{path}: site.{unknown[0]}: unknown setting (known: {', '.join(PARSERS)})")
    return table


def load_settings(environ: Mapping[str, str] = os.environ) -> Settings:
    """The settings, environment variables first."""
    table = config_table(environ)
    given = {}
    for name, parse in PARSERS.items():
        variable = PREFIX + name.upper()
        raw, where = (environ[variable], variable) if variable in environ else (table.get(name), f"site.{name}")
        if raw is None:
            continue
        try:
            given[name] = parse(raw)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
    return Settings(**given)
