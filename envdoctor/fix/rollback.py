"""Restoring a recorded environment: a plan like any other, computed from two freezes.

Only what differs is touched: distributions the record does not have are removed, and the recorded
lines that are missing or changed are installed exactly, without dependencies (the record already
lists every dependency at its version). Already-satisfied lines never reach an index, so undoing an
uninstall needs only the wheels that were removed.
"""

from __future__ import annotations

import re
import shlex
from typing import Dict, Sequence, Tuple

from envdoctor.checks.facts import normalize
from envdoctor.fix.installer import Installer
from envdoctor.fix.plan import Plan, Step, StepKind, StepStatus
from envdoctor.fix.record import Record

NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")
LOCAL_VARIANT = re.compile(r"==[^\s;]+\+(cu\d+|cpu|rocm[\d.]+|xpu)\b")
PYTORCH_INDEX = "https://download.pytorch.org/whl/"


def line_key(line: str) -> str:
    """The distribution a freeze line is about; an editable line is its own key."""
    match = NAME.match(line)
    return normalize(match.group(1)) if match and not line.startswith("-") else line


def by_key(lines: Sequence[str]) -> Dict[str, str]:
    return {line_key(line): line for line in lines if line.strip() and not line.lstrip().startswith("#")}


def variant_indexes(lines: Sequence[str]) -> Tuple[str, ...]:
    """PyTorch indexes that serve the local versions (`+cu121`, `+cpu`) among `lines`."""
    variants = sorted({m.group(1) for line in lines for m in [LOCAL_VARIANT.search(line)] if m})
    return tuple(arg for v in variants for arg in ("--extra-index-url", PYTORCH_INDEX + v))


def restore_plan(record: Record, current: Sequence[str]) -> Plan:
    """The steps that turn the environment whose freeze is `current` back into `record`."""
    installer: Installer = record.installer
    wanted, present = by_key(record.freeze), by_key(current)
    extra = sorted(k for k in present if k not in wanted and not k.startswith("-"))
    changed = [line for key, line in wanted.items() if present.get(key) != line]
    steps = (
        Step(
            StepKind.UNINSTALL,
            f"Remove what was installed after the record: {', '.join(extra) or 'nothing'}",
            "not in the recorded environment" if extra else "nothing was added since the record",
            StepStatus.PLANNED if extra else StepStatus.SKIPPED,
            installer.uninstall(extra) if extra else (),
        ),
        Step(
            StepKind.INSTALL,
            f"Reinstall the recorded versions: {', '.join(changed) or 'nothing'}",
            "missing or at another version than recorded" if changed else "every recorded version is in place",
            StepStatus.PLANNED if changed else StepStatus.SKIPPED,
            installer.install(["--no-deps", *variant_indexes(changed), *(a for line in changed for a in shlex.split(line))]) if changed else (),
        ),
    )
    return Plan(
        action="rollback",
        title=f"Restore the environment recorded {record.created} in {record.folder}",
        python=installer.python,
        installer=installer.name,
        steps=steps,
    )
