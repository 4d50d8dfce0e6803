"""Opening an SB3 model zip defensively: bounded reads, one-line errors, no member read that is not needed.

A model can be hostile (a member declaring a huge uncompressed size, a truncated file, 100,000 members,
two members of one name, `../` names and symlink entries) or simply not a model. The zip's directory is
sized up before zipfile parses it; only the small members (`data`, `_stable_baselines3_version`,
`system_info.txt`) are read, each up to a limit; the weights are never read by inspection, so its time
does not grow with the policy. Genuine SB3 models hold about six plain members with plain names.
"""

from __future__ import annotations

import io
import json
import re
import stat
import zipfile
from pathlib import Path
from typing import Any, BinaryIO, Dict, List, Optional

from envdoctor.errors import EnvdoctorError
from envdoctor.escape import escape_control
from envdoctor.files import nested_deeper

DATA = "data"
VERSION = "_stable_baselines3_version"
SYSTEM_INFO = "system_info.txt"
OPTIMIZER = "policy.optimizer.pth"
AUDIT = "envdoctor_sanitized.json"
LIMITS = {DATA: 64 * 2 ** 20, VERSION: 1024, SYSTEM_INFO: 64 * 1024}
PICKLE_LIMIT = 64 * 2 ** 20
MAX_MEMBERS = 10_000
MAX_DIRECTORY_BYTES = 4 * 2 ** 20
MAX_DATA_DEPTH = 64
DEFLATE_MAX_RATIO = 1032  # deflate cannot expand one byte into more (zlib technical details)
WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")


class ModelFileError(EnvdoctorError):
    """The file is missing, not a zip, damaged, or not a Stable-Baselines3 model."""


def check_directory(stream: BinaryIO, where: str) -> None:
    """Refuse a zip whose directory lists more members, or more bytes, than a model can have.

    Read from the end record before zipfile parses the directory, whose size its entry count may understate.
    """
    end = zipfile._EndRecData(stream)
    if end is None:
        return  # not a zip: zipfile says so in its own words
    entries, size = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]
    if entries > MAX_MEMBERS or size > MAX_DIRECTORY_BYTES:
        raise ModelFileError(
            f"{where}: the zip's directory lists {entries} members in {size} bytes "
            f"(a model has a handful; at most {MAX_MEMBERS} members and {MAX_DIRECTORY_BYTES} bytes are read)"
        )


def open_zip(path: Path) -> zipfile.ZipFile:
    if not path.exists():
        raise ModelFileError(f"{path}: no such file")
    if not path.is_file():
        raise ModelFileError(f"{path}: not a file")
    try:
        with open(path, "rb") as stream:
            check_directory(stream, str(path))
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, ValueError) as error:
        raise ModelFileError(f"{path}: not a zip archive, or a truncated one ({error})") from None
    except NotImplementedError as error:  # zipfile's word for a zip feature it cannot read
        raise ModelFileError(f"{path}: a zip this Python cannot read ({error})") from None
    except OSError as error:
        raise ModelFileError(f"{path}: cannot read: {error.strerror or error}") from None


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, path: Path) -> bytes:
    """The member's bytes, refusing a declared size above `limit` and never reading more than it."""
    if info.file_size > limit:
        raise ModelFileError(f"{path}: member {info.filename!r} declares {info.file_size} bytes (more than the {limit} allowed)")
    try:
        with archive.open(info) as stream:
            data = stream.read(limit + 1)
    except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError, ValueError, RuntimeError) as error:
        # RuntimeError is zipfile's "encrypted, password required"; NotImplementedError an unknown compression
        raise ModelFileError(f"{path}: member {info.filename!r} cannot be read ({error})") from None
    if len(data) > limit:
        raise ModelFileError(f"{path}: member {info.filename!r} is larger than the {limit} bytes allowed")
    return data


def impossible_size(info: zipfile.ZipInfo) -> bool:
    """A declared size its stored bytes cannot hold: a damaged member, or a bomb's lie."""
    if info.flag_bits & 0x1:  # encrypted: the sizes include the cipher's header; reading it is refused
        return False
    if info.compress_type == zipfile.ZIP_STORED:
        return info.file_size != info.compress_size
    if info.compress_type == zipfile.ZIP_DEFLATED:
        return info.file_size > info.compress_size * DEFLATE_MAX_RATIO + 1024
    return False


def unsafe_reason(info: zipfile.ZipInfo) -> Optional[str]:
    """Why a member may not go into a clean copy (an unzip would write it outside, or not as a file); None if plain."""
    name = info.orig_filename
    kind = stat.S_IFMT(info.external_attr >> 16)
    parts = re.split(r"[\\/]", name)
    if kind and kind != stat.S_IFREG:
        return f"a {'symbolic link' if kind == stat.S_IFLNK else 'folder' if kind == stat.S_IFDIR else 'special file'} entry, not a plain file"
    if not name or name.endswith("/"):
        return "a folder entry, not a plain file"
    if not name.isprintable():
        return "its name holds NUL or control characters"
    if name.startswith(("/", "\\")) or WINDOWS_DRIVE.match(name):
        return "an absolute name"
    if ".." in parts:
        return "its name climbs out with '..'"
    if "\\" in name:
        return "a backslash in its name"
    return None


def indexed(infos: List[zipfile.ZipInfo], path: Path) -> Dict[str, zipfile.ZipInfo]:
    """{name: info}, refusing what a model never holds and readers would see differently: too many
    members, two of one name (a NUL ends a name early for zipfile), sizes the stored bytes cannot hold."""
    if len(infos) > MAX_MEMBERS:
        raise ModelFileError(f"{path}: the zip has {len(infos)} members (a model has a handful; at most {MAX_MEMBERS} are read)")
    found: Dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        if info.filename in found:
            raise ModelFileError(f"{path}: member {info.filename!r} appears twice (each reader may take another one)")
        if impossible_size(info):
            raise ModelFileError(
                f"{path}: member {info.orig_filename!r} declares {info.file_size} bytes from {info.compress_size} bytes "
                "in the zip, more than they can hold (a damaged zip, or a zip bomb)"
            )
        found[info.filename] = info
    return found


class ModelArchive:
    """An open SB3 model zip: its members, and its small members read and parsed."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.zip = open_zip(self.path)
        try:
            self.infos = indexed(self.zip.infolist(), self.path)
            if DATA not in self.infos:
                raise ModelFileError(f"{self.path}: not a Stable-Baselines3 model (the zip has no `data` member)")
            self.data_bytes = self.read(DATA)
            self.data = self.parse_data(self.data_bytes)
        except BaseException:
            self.zip.close()
            raise

    def __enter__(self) -> "ModelArchive":
        return self

    def __exit__(self, *exc) -> None:
        self.zip.close()

    def read(self, name: str) -> bytes:
        return read_member(self.zip, self.infos[name], LIMITS[name], self.path)

    def text(self, name: str) -> Optional[str]:
        return self.read(name).decode("utf-8", "replace") if name in self.infos else None

    def parse_data(self, raw: bytes) -> Dict[str, Any]:
        try:
            data = json.loads(raw.decode("utf-8"))
        except RecursionError:
            raise ModelFileError(f"{self.path}: `data` is nested too deeply to read (SB3 writes a few levels)") from None
        except (UnicodeDecodeError, ValueError) as error:
            raise ModelFileError(f"{self.path}: `data` is not valid JSON ({escape_control(str(error), multiline=False)})") from None
        if not isinstance(data, dict):
            raise ModelFileError(f"{self.path}: `data` is JSON but not an object")
        if nested_deeper(data, MAX_DATA_DEPTH):
            raise ModelFileError(f"{self.path}: `data` is nested deeper than {MAX_DATA_DEPTH} levels (SB3 writes a few)")
        return data

    def members(self) -> List[Dict[str, Any]]:
        """Each member's name (escaped), sizes, compression, and why it is unsafe to copy (None: it is not)."""
        return [
            {"name": escape_control(i.orig_filename, multiline=False), "size": i.file_size, "compressed_size": i.compress_size,
             "compression": i.compress_type, "unsafe": unsafe_reason(i)}
            for i in self.infos.values()
        ]

    def unsafe_members(self) -> List[str]:
        """`'name': why` for each member a clean copy must not hold."""
        return [f"{i.orig_filename!r}: {unsafe_reason(i)}" for i in self.infos.values() if unsafe_reason(i)]

    def open_stream(self, name: str, limit: int) -> BinaryIO:
        """A seekable reader of a member: for a stored one a window on the file (seeks cost nothing); a
        compressed one is inflated once into memory, up to `limit` bytes (zipfile would inflate it again
        from the start at every backward seek)."""
        info = self.infos[name]
        if info.flag_bits & 0x1:
            raise ModelFileError(f"{self.path}: member {name!r} is encrypted")
        if info.compress_type == zipfile.ZIP_STORED:
            return StoredWindow(self.path, info)
        return io.BytesIO(read_member(self.zip, info, limit, self.path))


class StoredWindow(io.RawIOBase):
    """A read-only, seekable view of a stored (uncompressed) member's bytes inside the zip file.

    zipfile's own reader seeks forward by reading; the optimizer state of a big policy makes that slow.
    """

    def __init__(self, path: Path, info: zipfile.ZipInfo):
        super().__init__()
        self.file = open(path, "rb")
        self.file.seek(info.header_offset)
        header = self.file.read(zipfile.sizeFileHeader)
        if len(header) != zipfile.sizeFileHeader or header[:4] != zipfile.stringFileHeader:
            self.file.close()
            raise ModelFileError(f"{path}: member {info.filename!r} has a damaged local header")
        name_length = int.from_bytes(header[26:28], "little")
        extra_length = int.from_bytes(header[28:30], "little")
        self.start = info.header_offset + zipfile.sizeFileHeader + name_length + extra_length
        self.size = info.file_size
        self.position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def tell(self) -> int:
        return self.position

    def readinto(self, buffer) -> int:
        count = max(0, min(len(buffer), self.size - self.position))
        self.file.seek(self.start + self.position)
        data = self.file.read(count)
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)

    def close(self) -> None:
        self.file.close()
        super().close()
