"""Saving reports under a report directory with names that never collide, readable by their owner only.

A report holds paths, package lists and a program's last output lines: it is created 0600 in a
folder created 0700, whatever the umask, and never written through an existing file or link.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Union

from envdoctor.document import Document
from envdoctor.errors import UsageError

PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700


def report_name(prefix: str = "envdoctor") -> str:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"{prefix}-{stamp}-{os.urandom(3).hex()}.json"


def private_folder(directory: Path) -> None:
    """Create `directory` (and its parents) with the report folder itself readable by its owner only."""
    directory.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)


def write_private(path: Path, content: Union[str, bytes]) -> None:
    """Create `path` 0600 and write `content`; an existing file (or a link planted there) is refused."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), PRIVATE_FILE)
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(data)


def save_report(document: Document, directory: Path, prefix: str = "envdoctor") -> Path:
    """Write the JSON report into `directory` (created if needed) and return its path."""
    try:
        private_folder(directory)
        path = directory / report_name(prefix)
        write_private(path, document.text)
    except OSError as error:
        raise UsageError(f"cannot save the report in {directory}: {error.strerror or error}") from None
    return path
