"""SB3 model files built by hand, no SB3 needed: a zip as SB3 writes one (model_zip, model_saved_with),
and zips built byte by byte (raw_zip of Members), so names with NUL, duplicate members, symlink entries,
lying sizes and flags are as easy to make as a genuine model."""

from __future__ import annotations

import base64
import collections
import json
import pickle
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union


def model_zip(path: Path, data, system_info: str = "- Python: 3.11.7\n", sb3_version: str = "2.9.2") -> Path:
    """A model file as SB3 writes it: `data` (JSON, or the bytes or text given), its SB3 version and system info."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", data if isinstance(data, (bytes, str)) else json.dumps(data, indent=4))
        archive.writestr("_stable_baselines3_version", sb3_version)
        archive.writestr("system_info.txt", system_info)
    return path


def model_saved_with(path: Path, saved_with: str) -> Path:
    """A small model file saved by SB3 2.3.2 under Python `saved_with`, with one pickled entry (learning_rate)."""
    learning_rate = {":type:": "<class 'float'>", ":serialized:": base64.b64encode(pickle.dumps(0.0003, protocol=4)).decode()}
    return model_zip(path, {"gamma": 0.99, "learning_rate": learning_rate}, f"- Python: {saved_with}\n", sb3_version="2.3.2")


# ---------------------------------------------------------------- zips built byte by byte

LOCAL = struct.Struct("<4s5H3L2H")
CENTRAL = struct.Struct("<4s6H3L5H2L")
END = struct.Struct("<4s4H2LH")


@dataclass
class Member:
    """One zip member as it is written: `data` is the stored (maybe compressed) bytes, the rest is declared."""

    name: Union[str, bytes]
    data: bytes
    size: int
    crc: int
    method: int = zipfile.ZIP_STORED
    flags: int = 0
    mode: int = stat.S_IFREG | 0o644


def stored(name: Union[str, bytes], content: bytes, **declared: Any) -> Member:
    return Member(name, content, len(content), zlib.crc32(content), **declared)


def raw_zip(members: Sequence[Member], declared_entries: Optional[int] = None) -> bytes:
    """A zip of `members` exactly as they declare themselves, and `declared_entries` in its end record (by default their count)."""
    body, directory = bytearray(), bytearray()
    for m in members:
        name = m.name if isinstance(m.name, bytes) else m.name.encode()
        offset = len(body)
        body += LOCAL.pack(b"PK\x03\x04", 20, m.flags, m.method, 0, 0x21, m.crc, len(m.data), m.size, len(name), 0) + name + m.data
        directory += CENTRAL.pack(b"PK\x01\x02", 3 << 8 | 20, 20, m.flags, m.method, 0, 0x21, m.crc, len(m.data), m.size,
                                  len(name), 0, 0, 0, 0, m.mode << 16, offset) + name
    count = min(len(members), 0xFFFF) if declared_entries is None else declared_entries  # 0xFFFF: "see zip64", which has none
    return bytes(body + directory + END.pack(b"PK\x05\x06", 0, 0, count, count, len(directory), len(body), 0))


def data_bytes(data: Union[bytes, Dict[str, Any]]) -> bytes:
    return data if isinstance(data, bytes) else json.dumps(data, indent=4).encode()


def model_members(data: Union[bytes, Dict[str, Any]], python: str = "3.11.7") -> List[Member]:
    """The members of a model SB3 2.3.2 saved under Python `python`: `data`, the version, system info and a small policy.pth."""
    return [
        stored("data", data_bytes(data)),
        stored("_stable_baselines3_version", b"2.3.2"),
        stored("system_info.txt", f"- OS: Linux\n- Python: {python}\n- Stable-Baselines3: 2.3.2\n".encode()),
        stored("policy.pth", torch_zip(stored("archive/data.pkl", pickle.dumps(collections.OrderedDict(bias=0.5), protocol=2)))),
    ]


def torch_zip(*members: Member) -> bytes:
    """A zip of `members` as torch.save writes one, with its archive/version member."""
    return raw_zip([*members, stored("archive/version", b"3\n")])
