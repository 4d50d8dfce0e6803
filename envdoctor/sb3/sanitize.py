"""Writing a copy of a model whose schedule entries are plain numbers, so it loads on any Python.

Only the schedule keys that hold code, are corrupt or dangerous, or need a module outside SB3's stack
are replaced (schedules.py). `data` is rewritten the way SB3 writes it (`json.dumps(data, indent=4)`),
every other member is streamed byte for byte under its original name, date and compression, and an
audit member records what changed and why. A model holding a member that is not a plain file under a
safe relative name is refused, so a clean copy never carries a `../` name or a symlink entry. The
output is written to a temporary file next to it and renamed into place, only ever over a regular file
(never through a symbolic link, never over a device, FIFO or socket); the input is only read.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

from envdoctor import __version__
from envdoctor.errors import UsageError
from envdoctor.render.escape import escape_control
from envdoctor.sb3 import advice, optimizer, schedules
from envdoctor.sb3.archive import AUDIT, DATA, ModelArchive, ModelFileError
from envdoctor.sb3.forensics import inspect_model

CHUNK = 1 << 20
# Copying inflates every member: a model, even one zipped again with compression, inflates to a few times
# its size, a zip bomb to a thousand. Up to the floor any ratio is copied (a second or two of work).
MAX_EXPANSION = 100
EXPANSION_FLOOR = 256 * 2 ** 20


@dataclass(frozen=True)
class Sanitized:
    """What `sanitize` did: the keys it replaced (value, source) and the output's member digests."""

    output: Path
    replaced: Mapping[str, Mapping[str, Any]]
    copied: Mapping[str, str]


def refuse_blockers(facts: Mapping[str, Any]) -> None:
    blockers = advice.sanitize_blockers(facts)
    if blockers:
        details = escape_control("; ".join(f"{e['key']} ({e['verdict']}: {', '.join(e['reasons']) or 'unreadable'})" for e in blockers), multiline=False)
        raise UsageError(
            f"cannot sanitize {facts['path']}: {details}. These are not schedules and cannot be replaced by numbers; "
            "load it with custom_objects holding your real classes under the Python that saved it, then save it again"
        )


def refuse_unsafe_members(model: ModelArchive) -> None:
    unsafe = model.unsafe_members()
    if unsafe:
        raise UsageError(
            f"cannot sanitize {model.path}: member {'; '.join(unsafe)}. A clean copy holds only plain files "
            "under safe relative names; this zip was not written by SB3"
        )


def refuse_bomb(model: ModelArchive) -> None:
    declared = sum(info.file_size for info in model.infos.values())
    size = model.path.stat().st_size
    if declared > max(EXPANSION_FLOOR, size * MAX_EXPANSION):
        raise ModelFileError(
            f"{model.path}: its members declare {declared} bytes in a file of {size} bytes, more than a model "
            f"inflates to (at most {MAX_EXPANSION} times its size): a zip bomb, not copied"
        )


def check_paths(source: Path, output: Path, force: bool) -> None:
    if output.exists() and source.exists() and os.path.samefile(source, output):
        raise UsageError(f"{output} is the input file; sanitize never modifies its input")
    check_output(output, force)
    if not output.parent.is_dir():
        raise UsageError(f"{output.parent} is not a folder")


def check_output(output: Path, force: bool) -> None:
    """OUT is a new name or, with --force, a regular file: never a link (or what it points to), a folder or a device."""
    try:
        mode = os.lstat(output).st_mode
    except FileNotFoundError:
        return
    except OSError as error:
        raise UsageError(f"cannot write {output}: {error.strerror or error}") from None
    if stat.S_ISLNK(mode):
        raise UsageError(f"{output} is a symbolic link; sanitize writes a regular file, never through a link")
    if stat.S_ISDIR(mode):
        raise UsageError(f"{output} is a folder; give the file to write")
    if not stat.S_ISREG(mode):
        raise UsageError(f"{output} is a device, FIFO or socket; sanitize replaces only a regular file")
    if not force:
        raise UsageError(f"{output} exists; pass --force to replace it")


def audit(source: Path, replaced: Mapping[str, Any]) -> bytes:
    digest = hashlib.sha256()
    with open(source, "rb") as stream:
        for block in iter(lambda: stream.read(CHUNK), b""):
            digest.update(block)
    record = {"tool": "envdoctor sanitize", "version": __version__, "source": source.name, "source_sha256": digest.hexdigest(), "replaced": replaced}
    return json.dumps(record, indent=4).encode("utf-8")


def clone(info: zipfile.ZipInfo) -> zipfile.ZipInfo:
    """A fresh ZipInfo with the member's name, date, compression and attributes (writing mutates one)."""
    copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
    copy.compress_type = info.compress_type
    copy.external_attr = info.external_attr
    copy.create_system = info.create_system
    copy.comment = info.comment
    return copy


def copy_member(model: ModelArchive, info: zipfile.ZipInfo, out: zipfile.ZipFile) -> str:
    """Stream one member unchanged; returns the sha256 of its content."""
    digest = hashlib.sha256()
    try:
        with model.zip.open(info) as source, out.open(clone(info), "w", force_zip64=True) as target:
            for block in iter(lambda: source.read(CHUNK), b""):
                digest.update(block)
                target.write(block)
    except (zipfile.BadZipFile, EOFError, NotImplementedError, RuntimeError, zlib.error) as error:
        raise ModelFileError(f"{model.path}: member {info.filename!r} cannot be copied ({error})") from None
    return digest.hexdigest()


def write(model: ModelArchive, output: Path, data_bytes: bytes, audit_bytes: bytes, force: bool) -> Dict[str, str]:
    """Write the new zip to a temporary file beside `output`, then rename it into place (OUT is checked
    again first: copying the weights takes a while, and OUT may have become a link or a device meanwhile)."""
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent)
    except OSError as error:
        raise UsageError(f"cannot write {output}: {error.strerror or error}") from None
    copied: Dict[str, str] = {}
    try:
        with os.fdopen(handle, "wb") as stream, zipfile.ZipFile(stream, "w") as out:
            for info in model.zip.infolist():
                if info.filename == DATA:
                    out.writestr(clone(info), data_bytes)
                elif info.filename != AUDIT:
                    copied[info.filename] = copy_member(model, info, out)
            out.writestr(zipfile.ZipInfo(AUDIT, date_time=model.infos[DATA].date_time), audit_bytes)
        check_output(output, force)
        os.replace(temporary, output)
    except BaseException as error:
        if os.path.exists(temporary):
            os.unlink(temporary)
        if isinstance(error, OSError):  # the disk filled up, or OUT became a folder meanwhile
            raise UsageError(f"cannot write {output}: {error.strerror or error}") from None
        raise
    return copied


def sanitize(source: Path, output: Path, overrides: Mapping[str, Optional[float]], force: bool = False) -> Sanitized:
    """Write `output`: `source` with its unsafe schedules replaced by numbers; refuse what can't be."""
    source, output = Path(source), Path(output)
    facts = inspect_model(source)
    check_paths(source, output, force)
    refuse_blockers(facts)
    with ModelArchive(source) as model:
        refuse_unsafe_members(model)
        refuse_bomb(model)
        entries = {e["key"]: e for e in facts["entries"]}
        last_lr = lru_cache(maxsize=1)(lambda: optimizer.last_learning_rate(model))
        replaced = schedules.plan(model.data, entries, overrides, last_lr)
        data = dict(model.data)
        for key, choice in replaced.items():
            data[key] = choice["value"]
        data_bytes = json.dumps(data, indent=4).encode("utf-8") if replaced else model.data_bytes
        copied = write(model, output, data_bytes, audit(source, replaced), force)
    return Sanitized(output, replaced, copied)
