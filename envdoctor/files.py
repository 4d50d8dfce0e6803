"""Reading a file someone handed us: a regular file only, never more than a bound, never a wait, and
for JSON never nested past what the reader can walk.

A FIFO given as a report or a record would block `open` until a writer comes, a device like /dev/zero
would never end; both are refused before a byte is read. Opening with O_NONBLOCK makes the FIFO case
return at once, O_NOCTTY keeps a terminal device from becoming ours.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO, Optional, Type, Union

from envdoctor.errors import EnvdoctorError

OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


class NotRegular(OSError):
    """The path names a FIFO, a device, a socket or a folder: nothing a reader of outside data reads."""


def open_regular(path: Union[str, Path]) -> BinaryIO:
    """The regular file `path`, opened for reading in binary without ever waiting; OSError when it
    cannot be opened, NotRegular when it is something else than a regular file.

    Every reader of outside data (reports, records, policies, ELF objects, host files) opens through
    this, and bounds what it then reads itself."""
    descriptor = os.open(path, OPEN_FLAGS)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):  # before fdopen, which refuses a folder itself
            raise NotRegular(f"{path} is not a regular file")
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return os.fdopen(descriptor, "rb")


def read_bounded(path: Union[str, Path], limit: int) -> bytes:
    """At most `limit` bytes of the regular file `path` (more are not read); OSError otherwise."""
    with open_regular(path) as stream:
        return stream.read(limit)


def read_regular(path: Path, limit: int, what: str, error: Type[EnvdoctorError], shown: str = "") -> bytes:
    """The bytes of the regular file `path`, at most `limit`; `error` with a one-line reason otherwise.

    `what` names what the file should be ("an envdoctor report"), `shown` how to name it in "cannot read …".
    """
    try:
        opened = open_regular(path)
    except NotRegular:
        raise error(f"{path} is not a regular file (a FIFO, a device or a folder is not {what})") from None
    except OSError as failure:
        raise error(f"cannot read {shown or path}: {failure.strerror or failure}") from None
    with opened as stream:
        try:
            raw = stream.read(limit + 1)
        except OSError as failure:
            raise error(f"cannot read {shown or path}: {failure.strerror or failure}") from None
    if len(raw) > limit:
        raise error(f"{path} is larger than {limit // 2 ** 20} MiB: far beyond {what}")
    return raw


def read_json(path: Path, limit: int, what: str, error: Type[EnvdoctorError], shown: str = "", depth: Optional[int] = None) -> Any:
    """The JSON document in the regular file `path`, read as `read_regular` reads it and, with `depth`,
    nested no deeper than that many levels; `error` with a one-line reason otherwise.

    `what` is "a(n) <kind>" ("an envdoctor report"); too deep a document is beyond "any <kind>".
    """
    raw = read_regular(path, limit, what, error, shown)
    beyond = "any " + what.split(" ", 1)[-1]
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise error(f"{path} is nested deeper than {beyond}") from None
    except ValueError as failure:
        raise error(f"{path} is not JSON: {failure}") from None
    if depth is not None and nested_deeper(data, depth):
        raise error(f"{path} is nested deeper than {depth} levels, far beyond {beyond}")
    return data


def nested_deeper(value: Any, limit: int) -> bool:
    """Whether JSON `value` nests lists and objects more than `limit` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
