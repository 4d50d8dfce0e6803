"""Tiny wheels that carry only metadata, in the shape pip and PyPI give it (a .dist-info with METADATA,
WHEEL and RECORD): a local package index for the planner's release lookups and for pip itself."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path
from typing import Iterable, Mapping, Optional, Union

from packaging.utils import canonicalize_name


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def packed_wheel(path: Path, dist_info: str, files: Mapping[str, Union[str, bytes]], hashed: bool = False) -> Path:
    """`files` zipped as the wheel `path`, `dist_info`'s RECORD last and listing every member: with its
    sha256 and size when `hashed` (as pip writes it), its path alone otherwise (as some builders do)."""
    members = {member: content.encode() if isinstance(content, str) else content for member, content in files.items()}
    rows = [record_line(member, data) if hashed else f"{member},," for member, data in members.items()]
    members[f"{dist_info}/RECORD"] = ("\n".join(rows + [f"{dist_info}/RECORD,,"]) + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as wheel:
        for member, data in members.items():
            wheel.writestr(member, data)
    return path


def write_wheel(folder: Path, name: str, version: str, requires: Iterable[str] = (), requires_python: Optional[str] = None) -> Path:
    """A pure-Python wheel `name` `version` that installs one empty module and requires `requires`."""
    stem = canonicalize_name(name).replace("-", "_")
    info = f"{stem}-{version}.dist-info"
    metadata = "\n".join(
        ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        + ([f"Requires-Python: {requires_python}"] if requires_python else [])
        + [f"Requires-Dist: {r}" for r in requires]
    ) + "\n\n"
    files = {
        f"{stem}/__init__.py": b"",
        f"{info}/METADATA": metadata.encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: envdoctor-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n\n",
    }
    return packed_wheel(folder / f"{stem}-{version}-py3-none-any.whl", info, files, hashed=True)
