"""Opening an SB3 model zip defensively: bounded reads, one-line errors, no member read that is not needed.

A model can be hostile (a member declaring a huge uncompressed size, a truncated file) or simply not a
model. Only the small members (`data`, `_stable_baselines3_version`, `system_info.txt`) are read, each
up to a limit; the weights are never read by inspection, so its time does not grow with the policy.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any, BinaryIO, Dict, List, Optional

from envdoctor.errors import EnvdoctorError

DATA = "data"
VERSION = "_stable_baselines3_version"
SYSTEM_INFO = "system_info.txt"
OPTIMIZER = "policy.optimizer.pth"
AUDIT = "envdoctor_sanitized.json"
LIMITS = {DATA: 64 * 2 ** 20, VERSION: 1024, SYSTEM_INFO: 64 * 1024}
PICKLE_LIMIT = 64 * 2 ** 20


class ModelFileError(EnvdoctorError):
    """The file is missing, not a zip, damaged, or not a Stable-Baselines3 model."""


def open_zip(path: Path) -> zipfile.ZipFile:
    if not path.exists():
        raise ModelFileError(f"{path}: no such file")
    if not path.is_file():
        raise ModelFileError(f"{path}: not a file")
    try:
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


class ModelArchive:
    """An open SB3 model zip: its members, and its small members read and parsed."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.zip = open_zip(self.path)
        self.infos = {info.filename: info for info in self.zip.infolist()}
        if DATA not in self.infos:
            self.zip.close()
            raise ModelFileError(f"{self.path}: not a Stable-Baselines3 model (the zip has no `data` member)")
        self.data_bytes = self.read(DATA)
        self.data = self.parse_data(self.data_bytes)

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
        except (UnicodeDecodeError, ValueError) as error:
            raise ModelFileError(f"{self.path}: `data` is not valid JSON ({error})") from None
        if not isinstance(data, dict):
            raise ModelFileError(f"{self.path}: `data` is JSON but not an object")
        return data

    def members(self) -> List[Dict[str, Any]]:
        return [
            {"name": i.filename, "size": i.file_size, "compressed_size": i.compress_size, "compression": i.compress_type}
            for i in self.infos.values()
        ]

    def open_stream(self, name: str) -> BinaryIO:
        """A seekable reader of a member; for stored members a window on the file (seeks cost nothing)."""
        info = self.infos[name]
        if info.compress_type == zipfile.ZIP_STORED:
            return StoredWindow(self.path, info)
        return self.zip.open(info)


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
