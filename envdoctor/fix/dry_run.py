"""The installer's own word on a plan before anything changes: `pip install --dry-run --report`.

The planner's resolver (fix/resolve.py) decides from metadata which versions the plan asks for; pip
then resolves the plan's last install line for real against the indexes it would use, without changing
anything, and its report lists every distribution it would install. The plan shows that list; a
resolution pip cannot find refuses the plan before any step runs; a dry run that cannot happen
(no network, pip older than 22.2, uv, an interpreter still to be made without pip) leaves the plan
as planned, saying which versions it assumed.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import replace
from typing import Optional, Sequence, Tuple

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envdoctor.fix.plan import Plan, StepKind
from envdoctor.proc.children import NO_BYTECODE, run_child

FIRST_PIP_WITH_REPORT = Version("22.2")
TIMEOUT_S = 600.0
CONFLICT_WORDS = ("ResolutionImpossible", "conflicting dependencies", "No matching distribution found")
# A conflict pip reports after an index could not be reached says nothing about the plan.
NETWORK_WORDS = ("NewConnectionError", "Failed to establish a new connection", "Max retries exceeded", "Could not fetch URL", "ConnectTimeout", "ReadTimeout")
NETWORK_OPTIONS = ("--retries", "1", "--timeout", "15")


def pip_of(python: str) -> Optional[str]:
    result = run_child((python, NO_BYTECODE, "-m", "pip", "--version"), timeout=60)
    words = result.stdout.split()
    return words[1] if result.ok and len(words) > 1 else None


def last_install(plan: Plan) -> Optional[Tuple[str, ...]]:
    """The argv of the plan's last planned pip install: the one whose result is the environment."""
    installs = [s.argv for s in plan.steps if s.planned and s.kind is StepKind.INSTALL and s.argv[1:4] == ("-m", "pip", "install")]
    return installs[-1] if installs else None


def dry_run_argv(install: Sequence[str], python: str, report: str, new_environment: bool) -> Tuple[str, ...]:
    """The install line as a dry run by `python`; for an environment still to be made, `python` is the
    interpreter it will be made from, resolving as if nothing were installed."""
    fresh = ("--ignore-installed",) if new_environment else ()
    return (python, NO_BYTECODE, "-m", "pip", "install", "--dry-run", "--quiet", "--report", report, *NETWORK_OPTIONS, *fresh, *install[4:])


def assumed(plan: Plan, why: str) -> Plan:
    decided = [f"{name}=={version}" for name, version in plan.expect.installed.items()]
    decided += [c.requirement for c in plan.versions if c.requirement and "==" not in c.requirement]
    shown = ", ".join(decided) or "the versions in the install lines"
    return replace(plan, notes=plan.notes + (f"not resolved by pip ({why}); versions assumed: {shown}",))


def maker_of(plan: Plan) -> Optional[str]:
    """The interpreter a planned venv is made from; None when the plan installs in place."""
    return next((s.argv[0] for s in plan.steps if s.planned and s.kind is StepKind.CREATE_ENV and s.argv[1:3] == ("-m", "venv")), None)


def resolved(plan: Plan, pip_version: Optional[str]) -> Plan:
    """`plan` with pip's resolution of its last install line, or with why there is none."""
    install = last_install(plan)
    if install is None:
        return plan
    maker = maker_of(plan)
    if maker is not None:
        pip_version = pip_of(maker)
    try:
        usable = pip_version is not None and Version(pip_version) >= FIRST_PIP_WITH_REPORT
    except InvalidVersion:
        usable = False
    if not usable:
        return assumed(plan, f"pip {pip_version or 'unknown'} has no --dry-run --report (needs pip ≥ {FIRST_PIP_WITH_REPORT})")
    handle, report = tempfile.mkstemp(prefix="envdoctor-pip-report-", suffix=".json")
    os.close(handle)
    try:
        result = run_child(dry_run_argv(install, maker or install[0], report, maker is not None), timeout=TIMEOUT_S)
        text = open(report, encoding="utf-8").read() if result.ok else ""
    finally:
        os.unlink(report)
    if not result.ok:
        last = ((result.stderr or result.stdout).strip().splitlines() or [result.describe()])[-1]
        said = result.stderr + result.stdout
        if any(word in said for word in NETWORK_WORDS):
            return assumed(plan, f"pip could not reach an index: {next(line for line in said.splitlines() if any(w in line for w in NETWORK_WORDS)).strip()[:300]}")
        if any(word in said for word in CONFLICT_WORDS):
            return replace(plan, refusal=f"pip finds no set of versions for the plan's install line: {last}", alternative=False, steps=())
        return assumed(plan, f"pip's dry run {result.describe()}: {last}")
    try:
        items = json.loads(text).get("install", [])
        lines = tuple(sorted(f"{canonicalize_name(i['metadata']['name'])}=={i['metadata']['version']}" for i in items))
    except (ValueError, KeyError, TypeError, AttributeError):
        return assumed(plan, "pip's report did not read")
    return replace(plan, resolved=lines, notes=plan.notes + (f"pip's dry run resolved the install line: {len(lines)} distributions to install, listed under `resolved`",))
