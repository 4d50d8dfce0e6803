"""Writing a copy of a model that holds no pickle of the input: safe by construction, and loadable anywhere.

The copy's `data` holds only pickles the sanitiser wrote itself (pickle_writer.py) from the typed values
of entries proven data only (data_only.py), in the form pickle writes them. Schedule keys that are not
data only are replaced by plain numbers (knowledge/sb3_schedules.py); other entries that are not data only are dropped
with a line in the audit member when SB3 rebuilds them at load (DROPPABLE), and otherwise the copy is
refused with one line naming them. Not one byte of an input pickle is copied. `.pth` members are copied
only when torch.load(weights_only=True) would load them (weights_only.py), else the copy is refused;
`_stable_baselines3_version` and `system_info.txt` are text and copied; any other member is dropped (SB3
never reads it). `data` is written the way SB3 writes it (`json.dumps(data, indent=4)`) and the audit
member records what changed and why. A model holding a member that is not a plain file under a safe
relative name is refused. The output is written to a temporary file next to it and renamed into place,
only ever over a regular file (never through a symbolic link, never over a device, FIFO or socket); the
input is only read.
"""

from __future__ import annotations

import base64
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
from envdoctor.escape import escape_control
from envdoctor.knowledge import sb3_advice, sb3_schedules
from envdoctor.sb3 import classify, optimizer, pickle_vm, pickle_writer
from envdoctor.sb3.archive import AUDIT, DATA, SYSTEM_INFO, VERSION, ModelArchive, ModelFileError
from envdoctor.sb3.forensics import inspect_model, serialized
from envdoctor.sb3.weights_only import is_pth

CHUNK = 1 << 20
# Copying inflates every member: a model, even one zipped again with compression, inflates to a few times
# its size, a zip bomb to a thousand. Up to the floor any ratio is copied (a second or two of work).
MAX_EXPANSION = 100
EXPANSION_FLOOR = 256 * 2 ** 20


TEXT_MEMBERS = (VERSION, SYSTEM_INFO)


@dataclass(frozen=True)
class Sanitized:
    """What `sanitize` did: the keys it replaced (value, source), the entries and members it dropped (why),
    the entries it rewrote, and the copied members' digests."""

    output: Path
    replaced: Mapping[str, Mapping[str, Any]]
    copied: Mapping[str, str]
    dropped: Mapping[str, str]
    rewritten: tuple


def refuse_blockers(facts: Mapping[str, Any]) -> None:
    blockers = sb3_advice.sanitize_blockers(facts)
    if blockers:
        details = escape_control("; ".join(f"{e['key']} ({e['verdict']}: {', '.join(e['reasons']) or 'unreadable'})" for e in blockers), multiline=False)
        raise UsageError(
            f"cannot sanitize {facts['path']}: {details}. These are not schedules and cannot be replaced by numbers; "
            "load it with custom_objects holding your real classes under the Python that saved it, then save it again"
        )


def refuse_weights(facts: Mapping[str, Any]) -> None:
    refused = [m for m in facts.get("weights", ()) if m["verdict"] != "data"]
    if refused:
        details = escape_control("; ".join(f"{m['name']} ({', '.join(m['reasons'])})" for m in refused), multiline=False)
        raise UsageError(
            f"cannot sanitize {facts['path']}: member {details}. torch.load(weights_only=True) refuses it, and torch 2.6 "
            "and later load weights with weights_only=True by default: these are not weights torch saved; ask the author for the file"
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


def audit(source: Path, replaced: Mapping[str, Any], dropped: Mapping[str, str], rewritten: tuple) -> bytes:
    digest = hashlib.sha256()
    with open(source, "rb") as stream:
        for block in iter(lambda: stream.read(CHUNK), b""):
            digest.update(block)
    record = {
        "tool": "envdoctor sanitize", "version": __version__, "source": source.name, "source_sha256": digest.hexdigest(),
        "replaced": replaced, "dropped": dropped, "rewritten": list(rewritten),
        "pickles": "every pickle in `data` was written by envdoctor from typed values; none was copied from the source",
    }
    return json.dumps(record, indent=4).encode("utf-8")


def rewritten_entry(source: Path, key: str, entry: Mapping[str, Any]) -> Dict[str, Any]:
    """A data-only entry written again: its typed value traced, then pickled by envdoctor's own writer."""
    trace = pickle_vm.run(classify.decode(entry[":serialized:"]))
    try:
        payload = pickle_writer.write(trace.root)
    except pickle_writer.NotWritable as error:
        raise UsageError(f"cannot sanitize {source}: {escape_control(key, multiline=False)} holds {error}, which SB3 never writes") from None
    written = {":serialized:": base64.b64encode(payload).decode()}
    if isinstance(entry.get(":type:"), str):
        written = {":type:": entry[":type:"], **written}
    return written


def new_data(source: Path, data: Mapping[str, Any], facts: Mapping[str, Any], replaced: Mapping[str, Any]) -> tuple:
    """(the copy's `data`, {dropped key: why}, rewritten keys): numbers for replaced schedules, fresh pickles
    for data-only entries, nothing for the rest (refuse_blockers already refused what cannot be dropped)."""
    entries = {e["key"]: e for e in facts["entries"]}
    written: Dict[str, Any] = {}
    dropped: Dict[str, str] = {}
    rewritten = []
    for key, value in data.items():
        if key in replaced:
            written[key] = replaced[key]["value"]
        elif not serialized(value):
            written[key] = value
        elif entries[key]["verdict"] == sb3_advice.SOUND:
            written[key] = rewritten_entry(source, key, value)
            rewritten.append(key)
        else:
            dropped[key] = f"{entries[key]['verdict']}: {sb3_advice.DROPPABLE[key]}"
    return written, dropped, tuple(rewritten)


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


def kept(name: str) -> bool:
    """Members the copy carries: the weights (judged before) and SB3's two text members."""
    return is_pth(name) or name in TEXT_MEMBERS


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
                elif kept(info.filename):
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
    """Write `output`: `source`'s data-only entries in pickles of our own, its other schedules as numbers,
    what SB3 rebuilds dropped; refuse what can't be."""
    source, output = Path(source), Path(output)
    facts = inspect_model(source)
    check_paths(source, output, force)
    refuse_blockers(facts)
    with ModelArchive(source) as model:
        refuse_unsafe_members(model)
        refuse_bomb(model)
        refuse_weights(facts)
        entries = {e["key"]: e for e in facts["entries"]}
        last_lr = lru_cache(maxsize=1)(lambda: optimizer.last_learning_rate(model))
        replaced = sb3_schedules.plan(model.data, entries, overrides, last_lr)
        data, dropped, rewritten = new_data(source, model.data, facts, replaced)
        dropped.update({f"member {name}": "SB3 never reads it" for name in model.infos if name not in (DATA, AUDIT) and not kept(name)})
        copied = write(model, output, json.dumps(data, indent=4).encode("utf-8"), audit(source, replaced, dropped, rewritten), force)
    return Sanitized(output, replaced, copied, dropped, rewritten)
