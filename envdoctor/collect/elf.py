"""A small, bounded ELF reader: the symbol versions a shared object needs and defines, and its
DT_NEEDED, DT_RPATH and DT_RUNPATH, read with `struct` from the section headers without loading it.

What the dynamic loader checks before it runs anything: every `.gnu.version_r` entry (Elf_Verneed with
its Elf_Vernaux list) names a library and the versions wanted from it, and that library's
`.gnu.version_d` (Elf_Verdef with its Elf_Verdaux names) must define each one, else the load fails
with "version `GLIBCXX_3.4.30' not found". Layouts: the System V gABI and the LSB Core specification,
"Symbol Versioning" (refspecs.linuxfoundation.org LSB_5.0.0 Core-generic, sections 10.7.2-10.7.4).
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from typing import BinaryIO, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from envdoctor import host
from envdoctor.files import open_regular

MAGIC = b"\x7fELF"
SHT_PROGBITS = 1
SHT_DYNAMIC = 6
SHT_GNU_VERDEF = 0x6FFFFFFD
SHT_GNU_VERNEED = 0x6FFFFFFE
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
DT_NULL, DT_NEEDED, DT_RPATH, DT_RUNPATH = 0, 1, 15, 29
MAX_SECTIONS = 4096  # real objects have tens; a corrupt count must not make us read gigabytes
MAX_SECTION_BYTES = 8 * 2**20  # .dynstr of libtorch_cpu.so is about 6 MiB
MAX_OBJECT_BYTES = 32 * 2**20  # all that is read of one object: its few version and dynamic sections
MAX_ENTRIES = 20000  # version entries, names and dynamic entries of one object, all chains together
MAX_NAME_BYTES = 4096  # a version or library name; a string table without its ends is not scanned to its end


class NotElf(Exception):
    """The file is not an ELF object this reader understands, or it is truncated or corrupt."""


class TooLarge(NotElf):
    """The object asks for more than this reader reads of one file: its cost stays linear and bounded."""


@dataclass
class ElfVersions:
    """What one shared object needs from others and defines itself."""

    needs: Dict[str, List[str]] = field(default_factory=dict)  # library soname -> version names
    defines: List[str] = field(default_factory=list)
    needed: List[str] = field(default_factory=list)
    rpath: List[str] = field(default_factory=list)
    runpath: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class Section:
    type: int
    offset: int
    size: int
    link: int
    flags: int = 0

    @property
    def read_only_data(self) -> bool:
        """Loaded, neither written nor run: where a C string literal lives (.rodata and its kin)."""
        return self.type == SHT_PROGBITS and bool(self.flags & SHF_ALLOC) and not self.flags & (SHF_WRITE | SHF_EXECINSTR)


class Reader:
    """Fixed-layout reads of one file in the file's byte order and class."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.bytes_left = MAX_OBJECT_BYTES
        self.entries_left = MAX_ENTRIES
        self.read_sections: Dict[Tuple[int, int], bytes] = {}
        ident = self.read_at(0, 16)
        if ident[:4] != MAGIC or ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise NotElf("no ELF header")
        self.wide = ident[4] == 2
        self.order = "<" if ident[5] == 1 else ">"

    def read_at(self, offset: int, size: int) -> bytes:
        if size > self.bytes_left:
            raise TooLarge(f"more than {MAX_OBJECT_BYTES // 2**20} MiB of version and dynamic sections")
        self.bytes_left -= size
        self.stream.seek(offset)
        data = self.stream.read(size)
        if len(data) != size:
            raise NotElf("truncated")
        return data

    def unpack(self, layout: str, data: bytes, offset: int = 0) -> tuple:
        try:
            return struct.unpack_from(self.order + layout, data, offset)
        except struct.error:
            raise NotElf("truncated structure") from None

    def sections(self) -> List[Section]:
        header = self.read_at(0, 64 if self.wide else 52)
        if self.wide:
            shoff, = self.unpack("Q", header, 0x28)
            shentsize, shnum = self.unpack("HH", header, 0x3A)
        else:
            shoff, = self.unpack("I", header, 0x20)
            shentsize, shnum = self.unpack("HH", header, 0x2E)
        if shoff == 0 or shnum == 0:
            return []
        if shnum > MAX_SECTIONS or shentsize < (64 if self.wide else 40):
            raise NotElf("implausible section header table")
        table = self.read_at(shoff, shentsize * shnum)
        layout = "IIQQQQII" if self.wide else "IIIIIIII"
        found = []
        for index in range(shnum):
            _, kind, flags, _, offset, size, link, _ = self.unpack(layout, table, index * shentsize)
            found.append(Section(kind, offset, size, link, flags))
        return found

    def contents(self, section: Section) -> bytes:
        """A section's bytes, each section read once however many others link to it."""
        key = (section.offset, section.size)
        if key not in self.read_sections:
            if section.size > MAX_SECTION_BYTES:
                raise TooLarge(f"a section of {section.size} bytes, more than the {MAX_SECTION_BYTES // 2**20} MiB this reader reads")
            self.read_sections[key] = self.read_at(section.offset, section.size)
        return self.read_sections[key]

    def entry(self) -> None:
        """Count one entry against the object's budget."""
        self.entries_left -= 1
        if self.entries_left < 0:
            raise TooLarge(f"more than {MAX_ENTRIES} version and dynamic entries")


def c_string(table: bytes, offset: int) -> str:
    end = table.find(b"\x00", offset, offset + MAX_NAME_BYTES)
    if offset >= len(table) or end < 0:
        raise NotElf("string outside its table or longer than any name")
    return table[offset:end].decode("utf-8", "replace")


def linked_strings(reader: Reader, sections: List[Section], section: Section) -> bytes:
    if not 0 <= section.link < len(sections):
        raise NotElf("string table link out of range")
    return reader.contents(sections[section.link])


def chain(reader: Reader, start: int, step_at, limit: int = MAX_ENTRIES):
    """Offsets of a linked list whose entries give the distance to the next (0 ends it), each counted
    against the object's entry budget."""
    offset = start
    for _ in range(limit):
        reader.entry()
        yield offset
        step = step_at(offset)
        if step == 0:
            return
        offset += step
    raise NotElf("version chain too long")


def version_needs(reader: Reader, sections: List[Section], section: Section) -> Dict[str, List[str]]:
    data, strings = reader.contents(section), linked_strings(reader, sections, section)
    needs: Dict[str, List[str]] = {}
    for entry in chain(reader, 0, lambda at: reader.unpack("HHIII", data, at)[4]):
        _, count, file_name, aux, _ = reader.unpack("HHIII", data, entry)
        names = needs.setdefault(c_string(strings, file_name), [])
        if count:
            for item in chain(reader, entry + aux, lambda at: reader.unpack("IHHII", data, at)[4], count):
                names.append(c_string(strings, reader.unpack("IHHII", data, item)[3]))
    return needs


def version_definitions(reader: Reader, sections: List[Section], section: Section) -> List[str]:
    data, strings = reader.contents(section), linked_strings(reader, sections, section)
    names = []
    for entry in chain(reader, 0, lambda at: reader.unpack("HHHHIII", data, at)[6]):
        _, flags, _, count, _, aux, _ = reader.unpack("HHHHIII", data, entry)
        if count and not flags & 1:  # VER_FLG_BASE names the file itself, not a version
            names.append(c_string(strings, reader.unpack("II", data, entry + aux)[0]))
    return names


def dynamic_entries(reader: Reader, sections: List[Section], section: Section) -> List[Tuple[int, str]]:
    data, strings = reader.contents(section), linked_strings(reader, sections, section)
    layout, size = ("qQ", 16) if reader.wide else ("iI", 8)
    entries = []
    for offset in range(0, min(len(data), MAX_ENTRIES * size) - size + 1, size):
        reader.entry()
        tag, value = reader.unpack(layout, data, offset)
        if tag == DT_NULL:
            break
        if tag in (DT_NEEDED, DT_RPATH, DT_RUNPATH):
            entries.append((tag, c_string(strings, value)))
    return entries


def read_object(path: str) -> ElfVersions:
    """The versions and search paths of the ELF object at `path`, read in time and memory linear in
    what it reads and never more than its bounds; OSError (a FIFO or a device is refused before a
    byte is read), NotElf, or TooLarge past a bound."""
    with open_regular(path) as stream:
        reader = Reader(stream)
        sections = reader.sections()
        found = ElfVersions()
        for section in sections:
            if section.type == SHT_GNU_VERNEED:
                found.needs.update(version_needs(reader, sections, section))
            elif section.type == SHT_GNU_VERDEF:
                found.defines.extend(version_definitions(reader, sections, section))
            elif section.type == SHT_DYNAMIC:
                for tag, text in dynamic_entries(reader, sections, section):
                    target = {DT_NEEDED: found.needed, DT_RPATH: found.rpath, DT_RUNPATH: found.runpath}[tag]
                    target.extend([text] if tag == DT_NEEDED else [p for p in text.split(":") if p])
        return found


def read_versions(path: str) -> Optional[ElfVersions]:
    """The versions and search paths of the ELF object at `path`; None when it is not one, is corrupt,
    is beyond the reader's bounds, or is no regular file."""
    try:
        return read_object(path)
    except (OSError, NotElf):
        return None


# The C++ runtime of an environment: which libstdc++ provides which versions, and what its extensions need.

CXX_RUNTIME = "libstdc++.so.6"
RUNTIME_LABELS = ("GLIBCXX", "CXXABI")
SYSTEM_LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/lib64", "/usr/lib", "/lib")
SHARED_OBJECT = re.compile(r"\.so(\.\d+)*$")
MAX_FILES_VISITED = 400000
MAX_OBJECTS_READ = 6000
MAX_REQUIREMENTS_KEPT = 200


def label_version(name: str, label: str) -> Optional[Tuple[int, ...]]:
    """ "GLIBCXX_3.4.30" -> (3, 4, 30) for label GLIBCXX; None for other labels and GLIBCXX_DEBUG-like names."""
    prefix = label + "_"
    if not name.startswith(prefix) or not re.fullmatch(r"\d+(\.\d+)*", name[len(prefix):]):
        return None
    return tuple(int(part) for part in name[len(prefix):].split("."))


def version_key(text: Optional[str]) -> Tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")) if text else ()


def highest(names: Iterable[str], label: str) -> Optional[str]:
    """The highest `label` version among symbol-version names, as "3.4.30"."""
    versions = [v for v in (label_version(n, label) for n in names) if v]
    return ".".join(str(p) for p in max(versions)) if versions else None


def runtime_library(path: str, shown_as: Optional[str] = None) -> Optional[dict]:
    """What one libstdc++ provides: the highest GLIBCXX_ and CXXABI_ versions it defines."""
    versions = read_versions(path)
    if versions is None:
        return None
    return {
        "path": shown_as or path,
        "realpath": os.path.realpath(path),
        **{label.lower(): highest(versions.defines, label) for label in RUNTIME_LABELS},
    }


def system_runtime_path() -> Optional[str]:
    """The system's libstdc++.so.6 as the loader finds it: the ld.so.cache entry, else the standard folders."""
    from envdoctor.collect.libraries import LDCONFIG_CACHE, cache_paths

    try:
        cached = [p for p in cache_paths(host.path(LDCONFIG_CACHE).read_bytes()) if os.path.basename(p) == CXX_RUNTIME]
    except OSError:
        cached = []
    candidates = cached + [f"{folder}/{CXX_RUNTIME}" for folder in SYSTEM_LIBRARY_DIRS]
    return next((p for p in candidates if host.path(p).is_file()), None)


def shared_objects(folders: Iterable[str]) -> Iterator[str]:
    """Every shared object under `folders`, symlinked folders not followed, visits bounded."""
    visited = 0
    for folder in folders:
        for parent, _, names in os.walk(folder):
            for name in sorted(names):
                visited += 1
                if visited > MAX_FILES_VISITED:
                    return
                path = os.path.join(parent, name)
                if SHARED_OBJECT.search(name) and not os.path.islink(path):
                    yield path


def runtime_requirements(folders: Sequence[str], relative_to: str) -> dict:
    """The highest GLIBCXX_/CXXABI_ versions each extension needs from libstdc++.so.6, neediest first;
    objects beyond the reader's bounds are counted and the first one named, in one line."""
    needing, read, truncated, beyond = [], 0, None, []
    for path in shared_objects(folders):
        if read >= MAX_OBJECTS_READ:
            truncated = f"read {MAX_OBJECTS_READ} shared objects, the most this reads"
            break
        read += 1
        try:
            versions: Optional[ElfVersions] = read_object(path)
        except TooLarge as error:
            beyond.append(f"{os.path.relpath(path, relative_to)}: {error}")
            versions = None
        except (OSError, NotElf):
            versions = None
        wanted = versions.needs.get(CXX_RUNTIME) if versions else None
        if wanted:
            needs = {label.lower(): highest(wanted, label) for label in RUNTIME_LABELS}
            needing.append({"path": os.path.relpath(path, relative_to), **needs})
    needing.sort(key=lambda r: (version_key(r["glibcxx"]), version_key(r["cxxabi"])), reverse=True)
    if len(needing) > MAX_REQUIREMENTS_KEPT:
        truncated = (truncated + "; " if truncated else "") + f"kept the {MAX_REQUIREMENTS_KEPT} neediest of {len(needing)}"
    if beyond:
        others = f" and {len(beyond) - 1} more" if len(beyond) > 1 else ""
        truncated = (truncated + "; " if truncated else "") + f"not read, beyond this reader's bounds: {beyond[0]}{others}"
    return {"objects_read": read, "requirements": needing[:MAX_REQUIREMENTS_KEPT], "truncated": truncated}


def chosen_runtime(prefix: str, environ: Mapping[str, str]) -> Tuple[str, Optional[str]]:
    """(how, path) of the libstdc++.so.6 the process will load, by the rule in the module docstring of
    checks/conda.py: LD_PRELOAD, then LD_LIBRARY_PATH, then the conda environment's own, then the system's."""
    for entry in re.split(r"[:\s]+", environ.get("LD_PRELOAD", "")):
        if os.path.basename(entry).startswith("libstdc++.so") and os.path.isfile(entry):
            return "LD_PRELOAD", entry
    for folder in (d for d in environ.get("LD_LIBRARY_PATH", "").split(":") if d):
        if os.path.isfile(os.path.join(folder, CXX_RUNTIME)):
            return "LD_LIBRARY_PATH", os.path.join(folder, CXX_RUNTIME)
    own = os.path.join(prefix, "lib", CXX_RUNTIME)
    if os.path.isfile(own):
        return "env", own
    return "system", None


def cxx_runtime(prefix: str, python: str, site_folders: Sequence[str], environ: Mapping[str, str]) -> dict:
    """The C++ runtime facts of the environment at `prefix`: the env's and the system's libstdc++, the
    one that will be loaded, the interpreter's own search paths, and what the extensions need."""
    system_path = system_runtime_path()
    system = runtime_library(str(host.path(system_path)), system_path) if system_path else None
    how, path = chosen_runtime(prefix, environ)
    interpreter = read_versions(os.path.realpath(python))
    own = os.path.join(prefix, "lib", CXX_RUNTIME)
    return {
        "env_library": runtime_library(own) if os.path.isfile(own) else None,
        "system_library": system,
        "loaded": {"via": how, "library": runtime_library(path) if path else system},
        "python": {"path": os.path.realpath(python), "rpath": interpreter.rpath if interpreter else [], "runpath": interpreter.runpath if interpreter else []},
        **runtime_requirements(site_folders, prefix),
    }
