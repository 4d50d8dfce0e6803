"""Where host files are read from.

`ENVDOCTOR_ROOT=DIR` makes every collector read `/proc`, `/sys`, `/etc`, `/usr/lib/wsl` and `/dev`
facts under DIR instead of `/`: how tests (and users reproducing a report) present a WSL2 kernel or a
small /dev/shm to a machine that has neither.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from envdoctor.files import read_bounded

ROOT_VARIABLE = "ENVDOCTOR_ROOT"
HOST_FILE_LIMIT = 16 << 20  # /proc/cpuinfo of a machine with hundreds of CPUs is about 1 MiB


def root() -> Path:
    return Path(os.environ.get(ROOT_VARIABLE) or "/")


def is_rerooted() -> bool:
    return bool(os.environ.get(ROOT_VARIABLE))


def path(absolute: str) -> Path:
    """The host path `absolute` (e.g. "/proc/version") under the current root."""
    return root() / absolute.lstrip("/")


def read_text(absolute: str) -> Optional[str]:
    """The file's text, at most HOST_FILE_LIMIT bytes of it, or None when it does not exist, is no
    regular file (a FIFO planted under ENVDOCTOR_ROOT) or cannot be read (a fact, not an error)."""
    try:
        return read_bounded(path(absolute), HOST_FILE_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return None


def exists(absolute: str) -> bool:
    return path(absolute).exists()
