"""The property every copy `sanitize` writes holds: every pickle in it is parsed by the symbolic machine and
holds only the sanitiser's own opcodes and data_only.py's constructors, and every `.pth` it carries is one
torch.load(weights_only=True) admits."""

from __future__ import annotations

import base64
import json
import zipfile
from pathlib import Path
from typing import List

from envdoctor.sb3 import data_only, pickle_vm, weights_only
from envdoctor.sb3.archive import ModelArchive
from envdoctor.sb3.pickle_vm import callee

# The opcodes pickle_writer.py writes, and nothing else.
WRITER_OPCODES = {
    "PROTO", "STOP", "NONE", "NEWTRUE", "NEWFALSE", "BININT1", "BININT2", "BININT", "LONG1", "LONG4", "BINFLOAT",
    "BINUNICODE", "BINUNICODE8", "BYTEARRAY8", "BINBYTES", "BINBYTES8", "EMPTY_TUPLE", "MARK", "TUPLE", "EMPTY_LIST",
    "APPENDS", "EMPTY_DICT", "SETITEMS", "EMPTY_SET", "ADDITEMS", "FROZENSET", "STACK_GLOBAL", "MEMOIZE", "BINGET",
    "LONG_BINGET", "REDUCE", "NEWOBJ", "BUILD",
}


def assert_own_pickle(payload: bytes) -> None:
    """A pickle the sanitiser wrote: its opcodes, its constructors, its names, and the data-only proof."""
    trace = pickle_vm.run(payload)
    assert trace.opnames <= WRITER_OPCODES, trace.opnames - WRITER_OPCODES
    assert all(data_only.admitted_global(g) for g in trace.globals), [g.dotted for g in trace.globals]
    assert all(callee(c) is not None and data_only.dotted(callee(c)) in data_only.CONSTRUCTORS for c in trace.calls)
    assert data_only.reasons(trace) == []


def assert_sanitised_copy(path: Path, source_payloads: List[str] = ()) -> None:
    """Every pickle in the copy: `data`'s entries are the sanitiser's own, its weights are what weights_only
    admits, and no payload of the source appears anywhere in it."""
    with zipfile.ZipFile(path) as archive:
        data = json.loads(archive.read("data"))
        for value in data.values():
            if isinstance(value, dict) and ":serialized:" in value:
                assert_own_pickle(base64.b64decode(value[":serialized:"]))
        blob = b"".join(archive.read(name) for name in archive.namelist())
    assert not [p for p in source_payloads if p.encode() in blob], "a pickle of the source was copied"
    with ModelArchive(path) as model:
        for name in model.infos:
            if weights_only.is_pth(name):
                assert weights_only.member_reasons(model, name) == [], name
