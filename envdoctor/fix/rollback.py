"""Restoring a recorded environment: a plan like any other, computed from two freezes.

Only what differs is touched: distributions the record does not have are removed, and the recorded
lines that are missing or changed are installed exactly, without dependencies (the record already
lists every dependency at its version). Already-satisfied lines never reach an index, so undoing an
uninstall needs only the wheels that were removed.
"""

from __future__ import annotations

import re
from typing import Dict, Sequence, Tuple

from envdoctor.fix import FixError
from envdoctor.fix.freeze_lines import FreezeLine, parse
from envdoctor.fix.installer import Installer
from envdoctor.fix.plan import Plan, Step, StepKind, StepStatus
from envdoctor.fix.record import Record

LOCAL_VARIANT = re.compile(r"==[^\s;]+\+(cu\d+|cpu|rocm[\d.]+|xpu)\b")
PYTORCH_INDEX = "https://download.pytorch.org/whl/"


def parsed(lines: Sequence[str]) -> Dict[str, FreezeLine]:
    """The requirements of a freeze by the distribution each is about; comments are left out."""
    found: Dict[str, FreezeLine] = {}
    for line in lines:
        try:
            requirement = parse(line)
        except ValueError as error:
            raise FixError(f"cannot read the freeze line {line[:200]!r}: {error}") from None
        if requirement is not None:
            found[requirement.key] = requirement
    return found


def by_key(lines: Sequence[str]) -> Dict[str, str]:
    """Distribution -> its freeze text: two freezes are the same environment when these are equal."""
    return {key: requirement.text for key, requirement in parsed(lines).items()}


def variant_indexes(lines: Sequence[str]) -> Tuple[str, ...]:
    """PyTorch indexes that serve the local versions (`+cu121`, `+cpu`) among `lines`."""
    variants = sorted({m.group(1) for line in lines for m in [LOCAL_VARIANT.search(line)] if m})
    return tuple(arg for v in variants for arg in ("--extra-index-url", PYTORCH_INDEX + v))


def restore_plan(record: Record, current: Sequence[str]) -> Plan:
    """The steps that turn the environment whose freeze is `current` back into `record`."""
    installer: Installer = record.installer
    wanted, present = parsed(record.freeze), parsed(current)
    extra = sorted(k for k, line in present.items() if k not in wanted and not line.editable_without_name)
    changed = [line for key, line in wanted.items() if present.get(key) != line]
    texts = [line.text for line in changed]
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
            f"Reinstall the recorded versions: {', '.join(texts) or 'nothing'}",
            "missing or at another version than recorded" if changed else "every recorded version is in place",
            StepStatus.PLANNED if changed else StepStatus.SKIPPED,
            installer.install(["--no-deps", *variant_indexes(texts), *(a for line in changed for a in line.args)]) if changed else (),
        ),
    )
    return Plan(
        action="rollback",
        title=f"Restore the environment recorded {record.created} in {record.folder}",
        python=installer.python,
        installer=installer.name,
        steps=steps,
    )
