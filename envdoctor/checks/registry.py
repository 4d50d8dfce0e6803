"""Loading every check: the built-in modules, then third-party entry points. envdoctor/catalogue.py
puts them beside the policy's rules and the linking rules, and selects among them."""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys
from functools import lru_cache

from envdoctor.checks import CHECKS, ENTRY_POINT_GROUP, Check

BUILTIN_MODULES = (
    "envdoctor.checks.wsl",
    "envdoctor.checks.cpu",
    "envdoctor.checks.threads",
    "envdoctor.checks.memory",
    "envdoctor.checks.probe",
    "envdoctor.checks.sb3",
    "envdoctor.checks.wheels",
    "envdoctor.checks.cuda",
    "envdoctor.checks.gpu",
    "envdoctor.checks.numpy",
    "envdoctor.checks.imports",
    "envdoctor.checks.requirements",
    "envdoctor.checks.installs",
    "envdoctor.checks.conda",
    "envdoctor.checks.run",
    "envdoctor.checks.run_hang",
    "envdoctor.checks.run_memory",
    "envdoctor.checks.run_bisect",
    "envdoctor.checks.doctor",
)


def may_declare_plugins() -> bool:
    """Whether a distribution on sys.path may declare an `envdoctor.checks` entry point, read from the
    entry_points.txt files themselves: importing importlib.metadata (email and its parsers) costs more
    than judging every check, and almost no environment has a plugin. What cannot be read that way (a
    zip or an egg on sys.path, a finder that provides distributions of its own) counts as maybe."""
    if any(hasattr(finder, "find_distributions") and finder is not importlib.machinery.PathFinder for finder in sys.meta_path):
        return True
    for entry in sys.path:
        folder = entry or os.curdir
        if not isinstance(folder, str) or folder.lower().endswith(".egg"):
            return True
        try:
            names = os.listdir(folder)
        except NotADirectoryError:
            return True
        except OSError:
            continue
        if any(declares_plugins(os.path.join(folder, name)) for name in names if name.lower().endswith((".dist-info", ".egg-info"))):
            return True
    return False


def declares_plugins(metadata_folder: str) -> bool:
    try:
        with open(os.path.join(metadata_folder, "entry_points.txt"), "rb") as stream:
            return ENTRY_POINT_GROUP.encode() in stream.read()
    except OSError:
        return False


def plugin_entry_points() -> list:
    if not may_declare_plugins():
        return []
    from importlib import metadata  # costly to import; `check` loads checks while collectors wait on children

    entry_points = metadata.entry_points()
    if hasattr(entry_points, "select"):
        return list(entry_points.select(group=ENTRY_POINT_GROUP))
    return list(entry_points.get(ENTRY_POINT_GROUP, ()))  # Python 3.9


@lru_cache(maxsize=1)
def load_checks() -> tuple:
    """All checks, and for each plugin that failed to load, its name and the error; loaded once."""
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    failures = []
    for entry_point in plugin_entry_points():
        try:
            entry_point.load()
        except Exception as error:  # a broken plugin must not break the doctor
            failures.append((entry_point.name, f"{type(error).__name__}: {error}"))
    return tuple(sorted(CHECKS, key=builtin_order)), tuple(failures)


def builtin_order(check: Check) -> int:
    """A check's place: built-in ones in BUILTIN_MODULES order, whichever module was imported first
    (a policy or a rule may import one early), then the plugins' in the order they registered."""
    module = check.function.__module__
    return BUILTIN_MODULES.index(module) if module in BUILTIN_MODULES else len(BUILTIN_MODULES)
