"""Which GPU kernels a CUDA library really ships, read from its fatbins without loading it.

torch.cuda.get_arch_list() needs torch imported and its CUDA initialised; the same answer is written
in the libraries themselves. nvcc embeds one fatbin per translation unit in the ELF section
`.nv_fatbin`; each fatbin is a header (magic 0xBA55ED50, version, header size, size of what follows)
and a run of entries, each with its own header: the kind (1 PTX, 2 cubin), the header's size, the
payload's size and, at byte 28, the compute capability it was built for (80 for sm_80/compute_80).
Only those headers are read, a few dozen bytes each, never the payloads; the layout was checked
against libraries nvcc built for a chosen arch list (tests/facts/test_fatbin.py).

A library's kernels are those most of its translation units were built for: torch compiles every
unit with the release's TORCH_CUDA_ARCH_LIST, and a few units built for one extra capability
(arch-specific sm_90a code, say) do not make a GPU of that capability run the rest. The counts per
capability are kept as evidence. Every read is bounded: sections are found through the ELF reader,
and the number of fatbins and entries walked is capped.
"""

from __future__ import annotations

import glob
import os
import struct
from collections import Counter
from dataclasses import dataclass
from typing import Dict, Iterator, Optional, Sequence, Tuple

from envdoctor.collect.elf import SHT_PROGBITS, NotElf, Reader, Section

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_CUBIN = 1, 2
FATBIN_HEADER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries that follow
ENTRY_HEADER = struct.Struct("<HHIQ12xI")  # kind, version, header size, payload size, ..., capability at 28
MAX_FATBINS = 100000  # libtorch_cuda.so holds a few thousand
MAX_ENTRIES = 1000000
TORCH_LIBRARIES = ("libtorch_cuda.so", "libtorch_cuda_cu.so", "libtorch_cuda_cpp.so")


@dataclass(frozen=True)
class Fatbin:
    """The kernels of one translation unit: capabilities as ints (80 = 8.0) with a cubin, with PTX."""

    cubins: frozenset
    ptx: frozenset


def flag(kind: str, capability: int) -> str:
    return f"{kind}_{capability}"


def fatbin_sections(reader: Reader) -> Iterator[Section]:
    for section in reader.sections():
        if section.type == SHT_PROGBITS and section.size >= FATBIN_HEADER.size:
            if struct.unpack("<I", reader.read_at(section.offset, 4))[0] == FATBIN_MAGIC:
                yield section


def fatbins(reader: Reader, section: Section, budget: Counter) -> Iterator[Fatbin]:
    """The fatbins laid end to end in `section`; NotElf when a header points outside it."""
    end, at = section.offset + section.size, section.offset
    while at + FATBIN_HEADER.size <= end:
        magic, _, header_size, size = FATBIN_HEADER.unpack(reader.read_at(at, FATBIN_HEADER.size))
        if magic != FATBIN_MAGIC:
            return  # alignment padding after the last one
        if header_size < FATBIN_HEADER.size or at + header_size + size > end:
            raise NotElf("fatbin header outside its section")
        budget["fatbins"] += 1
        if budget["fatbins"] > MAX_FATBINS:
            raise OverflowError(f"more than {MAX_FATBINS} fatbins")
        yield entries(reader, at + header_size, at + header_size + size, budget)
        at += header_size + size


def entries(reader: Reader, start: int, end: int, budget: Counter) -> Fatbin:
    cubins, ptx, at = set(), set(), start
    while at + ENTRY_HEADER.size <= end:
        kind, _, header_size, size, capability = ENTRY_HEADER.unpack(reader.read_at(at, ENTRY_HEADER.size))
        if header_size < ENTRY_HEADER.size or at + header_size + size > end:
            raise NotElf("fatbin entry outside its fatbin")
        budget["entries"] += 1
        if budget["entries"] > MAX_ENTRIES:
            raise OverflowError(f"more than {MAX_ENTRIES} fatbin entries")
        {KIND_CUBIN: cubins, KIND_PTX: ptx}.get(kind, set()).add(capability)
        at += header_size + size
    return Fatbin(frozenset(cubins), frozenset(ptx))


def read_fatbins(path: str, budget: Optional[Counter] = None) -> Tuple[Fatbin, ...]:
    """Every fatbin of the ELF file at `path`; () for a file without any. Raises OSError, NotElf or
    OverflowError (a bound reached) for files it cannot read whole."""
    budget = Counter() if budget is None else budget
    with open(path, "rb", buffering=0) as stream:  # header reads are a few dozen bytes apart by megabytes: no read-ahead
        reader = Reader(stream)
        return tuple(f for section in fatbin_sections(reader) for f in fatbins(reader, section, budget))


def majority(found: Sequence[Fatbin]) -> Tuple[Tuple[str, ...], Dict[str, int]]:
    """The arch flags (get_arch_list() form) that at least half of the fatbins carry, and every flag's count."""
    counts: Counter = Counter()
    for fatbin in found:
        counts.update(flag("sm", c) for c in fatbin.cubins)
        counts.update(flag("compute", c) for c in fatbin.ptx)
    kept = [f for f, n in counts.items() if 2 * n >= len(found)]
    order = {"sm": 0, "compute": 1}
    kept.sort(key=lambda f: (order[f.split("_")[0]], int(f.split("_")[1])))
    return tuple(kept), dict(sorted(counts.items()))


def library_kernels(paths: Sequence[str]) -> dict:
    """The kernels the libraries at `paths` ship, as facts: the arch list in get_arch_list() form, the
    count of fatbins carrying each flag, and the files read; `error` when one could not be read whole."""
    budget: Counter = Counter()
    found = []
    try:
        for path in paths:
            found.extend(read_fatbins(path, budget))
    except (OSError, NotElf, OverflowError) as error:
        return {"files": list(paths), "error": f"{type(error).__name__}: {error}"}
    arch_list, counts = majority(found)
    return {"files": list(paths), "fatbins": len(found), "arch_list": list(arch_list), "counts": counts}


def torch_libraries(location: str) -> Tuple[str, ...]:
    """The CUDA libraries of the torch installed in the site-packages folder `location`."""
    folder = os.path.join(location, "torch", "lib")
    return tuple(p for name in TORCH_LIBRARIES for p in sorted(glob.glob(os.path.join(folder, name))) if os.path.isfile(p))


def torch_kernels(location: Optional[str]) -> Optional[dict]:
    """The kernels of the torch at `location`, or None when it has no CUDA library (a CPU or ROCm build)."""
    paths = torch_libraries(location) if location else ()
    return library_kernels(paths) if paths else None
