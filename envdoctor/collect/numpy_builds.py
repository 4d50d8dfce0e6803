"""Which NumPy C-API each installed distribution's extensions were built against, read from the binaries.

An extension that uses NumPy's C-API imports NumPy's core module by name when it loads (import_array()),
and that name is a string in its binary. NumPy 1.x headers hard-code `numpy.core._multiarray_umath`
(NumPy's own numpy/core/_multiarray_umath.py: "If an extension was compiled against NumPy 1.x it will
have these paths hard-coded"); NumPy 2 headers try `numpy._core._multiarray_umath` first and fall back
to the old name (numpy 2.4 numpy/__multiarray_api.h, _import_array). So a binary holding the new name
was built against NumPy 2, and one holding only the old name against NumPy 1.x, which NumPy 2 refuses
to load. This is the truth the knowledge table numpy2.csv can only approximate by version.

Only distributions that require NumPy in their own metadata, or that numpy2.csv names, are read; their
RECORD names their shared objects, read smallest first until one tells, each read bounded; of an ELF
object only its read-only data sections are read.
"""

from __future__ import annotations

import os
import re
from typing import Any, BinaryIO, Dict, Iterable, List, Mapping, Optional, Tuple

from packaging.utils import canonicalize_name

from envdoctor.collect.elf import NotElf, Reader
from envdoctor.files import open_regular
from envdoctor.knowledge import numpy2

NUMPY_2_CORE = b"numpy._core._multiarray_umath"
NUMPY_1_CORE = b"numpy.core._multiarray_umath"
COMMON_TAIL = b"core._multiarray_umath"  # searched for once; what precedes a hit tells the two names apart
CHUNK = 2**20
MAX_FILE_BYTES = 256 * 2**20  # larger libraries are engines, not the module that imports NumPy
MAX_BYTES_PER_DISTRIBUTION = 512 * 2**20
MAX_RECORD_BYTES = 16 * 2**20
MAX_DISTRIBUTIONS = 500
SHARED_OBJECT = re.compile(r"\.(so(\.\d+)*|pyd)$")
REQUIRES_NUMPY = re.compile(r"^\s*numpy\b", re.I)


def built_against(path: str) -> Tuple[Optional[str], int]:
    """("2" or "1" or None, bytes read) for one binary, read in chunks that overlap by a name's length."""
    found_old, read = False, 0
    with open_regular(path) as stream:
        for start, size in searched_ranges(stream):
            stream.seek(start)
            left, tail = min(size, MAX_FILE_BYTES - read), b""
            while left > 0:
                chunk = stream.read(min(CHUNK, left))
                if not chunk:
                    break
                read, left = read + len(chunk), left - len(chunk)
                window = tail + chunk
                names = core_names(window)
                if NUMPY_2_CORE in names:
                    return "2", read
                found_old = found_old or NUMPY_1_CORE in names
                tail = window[-len(NUMPY_2_CORE):]
    return ("1" if found_old else None), read


def core_names(window: bytes) -> set:
    """The NumPy core module names spelled out in `window`, found in one pass over it: both end in
    COMMON_TAIL, which is rare in a binary, so only its few hits are looked at again."""
    found, at = set(), window.find(COMMON_TAIL)
    while at >= 0:
        end = at + len(COMMON_TAIL)
        found.update(name for name in (NUMPY_2_CORE, NUMPY_1_CORE) if window.startswith(name, end - len(name)))
        at = window.find(COMMON_TAIL, at + 1)
    return found


def searched_ranges(stream: BinaryIO) -> List[Tuple[int, int]]:
    """(offset, size) of where the module's name can be: the read-only data sections of an ELF
    object, where a C string literal lives (a tenth of a large extension, its code left unread), or
    the whole file when it is no ELF object with such sections (a Windows `.pyd`, stripped headers)."""
    try:
        sections = Reader(stream).sections()
    except NotElf:
        sections = []
    ranges = [(s.offset, s.size) for s in sections if s.read_only_data]
    return ranges or [(0, MAX_FILE_BYTES)]


def shared_objects(location: str, metadata: str) -> List[str]:
    """The shared objects a distribution's RECORD lists, smallest first, those too big to be read left out."""
    try:
        with open(os.path.join(location, metadata, "RECORD"), encoding="utf-8", errors="replace") as stream:
            lines = stream.read(MAX_RECORD_BYTES).splitlines()
    except OSError:
        return []
    paths, inside = [], os.path.normpath(location) + os.sep
    for line in lines:
        relative = line.rsplit(",", 2)[0].strip('"')
        if not SHARED_OBJECT.search(relative):
            continue
        path = os.path.normpath(os.path.join(location, relative))
        if path.startswith(inside) and os.path.isfile(path):
            size = os.path.getsize(path)
            if size <= MAX_FILE_BYTES:
                paths.append((size, path))
    return [p for _, p in sorted(paths)]


def distribution_build(location: str, metadata: str) -> Optional[dict]:
    """{"numpy": "2" | "1", "extension": the binary that told, relative to `location`}, or None."""
    budget = MAX_BYTES_PER_DISTRIBUTION
    for path in shared_objects(location, metadata):
        try:
            found, read = built_against(path)
        except OSError:
            continue
        if found:
            return {"numpy": found, "extension": os.path.relpath(path, location)}
        budget -= read
        if budget <= 0:
            break
    return None


def uses_numpy(dist: Mapping[str, Any], known: Iterable[str]) -> bool:
    name = canonicalize_name(str(dist.get("name", "")))
    return name in known or any(REQUIRES_NUMPY.match(str(r)) for r in dist.get("requires") or ())


def numpy_builds(distributions: Iterable[Mapping[str, Any]]) -> Dict[str, dict]:
    """Distribution name -> the NumPy its extensions were built against, for those that tell."""
    known = set(numpy2.table())
    found: Dict[str, dict] = {}
    candidates = [d for d in distributions if isinstance(d, Mapping) and d.get("metadata") and d.get("location") and uses_numpy(d, known)]
    for dist in candidates[:MAX_DISTRIBUTIONS]:
        build = distribution_build(str(dist["location"]), str(dist["metadata"]))
        if build:
            found[str(dist["name"])] = build
    return found
