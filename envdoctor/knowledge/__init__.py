"""What envdoctor knows about the CUDA stack, shipped as data files that cite a source on every row.

The tables change with every torch and CUDA release, so they live in CSV files beside this module
(drivers, torch matrix, GPU architectures, NVIDIA wheels) and the modules here only load and query them.
Lines starting with `#` in a data file are its header notes.

What is known about SB3 model files lives here too, below the checks that judge a model and the
`sb3/` feature that reads one: the CPython opcode tables and code layouts (bytecode.py, opcodes.json),
the schedule entries SB3 rebuilds at load (sb3_schedules.py), what that means for a model under a
target interpreter (sb3_verdicts.py) and the steps a model finding recommends (sb3_advice.py).
"""

from __future__ import annotations

import csv
import io
from functools import lru_cache
from typing import Dict, Optional, Tuple

from envdoctor import package_data


@lru_cache(maxsize=None)
def rows(filename: str) -> Tuple[Dict[str, str], ...]:
    """The rows of a data file in this package, as dicts of column -> text (empty cells as "")."""
    text = package_data.read_text(__name__, filename)
    body = "".join(line for line in io.StringIO(text) if not line.startswith("#"))
    return tuple(dict(row) for row in csv.DictReader(io.StringIO(body)))


def version_tuple(text: str) -> Tuple[int, ...]:
    """ "580.65.06" -> (580, 65, 6); comparing driver and CUDA versions needs numbers, not text."""
    return tuple(int(part) for part in text.strip().split(".") if part.isdigit())


def minor_of(version: str) -> str:
    """ "12.1.105" or "12.1" -> "12.1": the tables are keyed by major.minor."""
    return ".".join(version.split("+", 1)[0].split(".")[:2])


def optional(cell: str) -> Optional[str]:
    return cell or None


def words(cell: str) -> Tuple[str, ...]:
    return tuple(cell.split())
