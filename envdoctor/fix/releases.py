"""Where a plan reads other releases of a package: their versions, Requires-Dist and Requires-Python.

A package that excludes the pinned torch is put back at the newest release whose own metadata admits
the new stack, so the plan needs the metadata of releases that are not installed. It comes from a
folder of wheels (`fix --wheels DIR`, read from each wheel's METADATA), from PyPI's JSON API, or from
nowhere (`--offline`, or PyPI unreachable): then `versions` answers None and the plan says what it
assumed instead. Every lookup is bounded in time and in count.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

PYPI = "https://pypi.org/pypi"
TIMEOUT_S = 10.0
MAX_METADATA_BYTES = 4 * 1024 * 1024
WHEEL_NAME = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")


def python_range(text: Optional[str]) -> Optional[str]:
    """A Requires-Python as packaging writes it back (None when absent or unreadable): metadata is
    outside text, and only its parsed form reaches a plan."""
    try:
        return str(SpecifierSet(text)) if text else None
    except InvalidSpecifier:
        return None


@dataclass(frozen=True)
class Release:
    """One release of a package as its metadata states it; `requires_python` already parsed."""

    name: str
    version: Version
    requires: Tuple[str, ...]
    requires_python: Optional[str] = None

    def supports_python(self, python: Version) -> bool:
        return not self.requires_python or SpecifierSet(self.requires_python).contains(python, prereleases=True)


class ReleaseIndex:
    """No index: every question is answered None ("cannot tell"), so the plan assumes and says so."""

    where = "no package index (offline)"

    def versions(self, name: str) -> Optional[List[Version]]:
        """The package's released versions, newest first; None when this index cannot tell."""
        return None

    def release(self, name: str, version: Version) -> Optional[Release]:
        return None


OFFLINE = ReleaseIndex()


def parse_metadata(text: str, name: str, version: Version) -> Release:
    message = HeaderParser().parsestr(text)
    return Release(canonicalize_name(name), version, tuple(message.get_all("Requires-Dist") or ()), python_range(message.get("Requires-Python")))


class WheelFolder(ReleaseIndex):
    """The wheels in one folder (what `pip download` leaves), read from their METADATA."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.where = f"the wheels in {self.folder}"
        self.wheels: Dict[str, Dict[Version, Path]] = {}
        for path in sorted(self.folder.glob("*.whl")):
            match = WHEEL_NAME.match(path.name)
            try:
                version = Version(match.group("version")) if match else None
            except InvalidVersion:
                version = None
            if version is not None:
                self.wheels.setdefault(canonicalize_name(match.group("name")), {})[version] = path

    def versions(self, name: str) -> Optional[List[Version]]:
        return sorted(self.wheels.get(canonicalize_name(name), {}), reverse=True)

    def release(self, name: str, version: Version) -> Optional[Release]:
        path = self.wheels.get(canonicalize_name(name), {}).get(version)
        if path is None:
            return None
        try:
            with zipfile.ZipFile(path) as wheel:
                entry = next(n for n in wheel.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
                if wheel.getinfo(entry).file_size > MAX_METADATA_BYTES:
                    return None
                return parse_metadata(wheel.read(entry).decode("utf-8", "replace"), name, version)
        except (OSError, zipfile.BadZipFile, StopIteration):
            return None


class PyPIJson(ReleaseIndex):
    """PyPI's JSON API. Once a request fails for want of a network, it answers None from then on."""

    def __init__(self, url: str = PYPI, timeout_s: float = TIMEOUT_S):
        self.url, self.timeout_s, self.where = url.rstrip("/"), timeout_s, "PyPI"
        self.reachable = True
        self.cache: Dict[str, Optional[dict]] = {}

    def get(self, path: str) -> Optional[dict]:
        if not self.reachable:
            return None
        if path not in self.cache:
            try:
                with urllib.request.urlopen(f"{self.url}/{path}/json", timeout=self.timeout_s) as response:
                    self.cache[path] = json.loads(response.read(MAX_METADATA_BYTES))
            except urllib.error.HTTPError:
                self.cache[path] = None
            except (urllib.error.URLError, OSError, ValueError):
                self.reachable = False
                return None
        return self.cache[path]

    def versions(self, name: str) -> Optional[List[Version]]:
        data = self.get(canonicalize_name(name))
        if data is None:
            return None if not self.reachable else []
        found = []
        for text, files in (data.get("releases") or {}).items():
            try:
                version = Version(text)
            except InvalidVersion:
                continue
            if files and not all(f.get("yanked") for f in files) and not version.is_prerelease:
                found.append(version)
        return sorted(found, reverse=True)

    def release(self, name: str, version: Version) -> Optional[Release]:
        """From the release's own JSON page, else from a wheel's metadata file (PEP 658), which
        mirrors of PyPI serve where they have no per-release pages."""
        info = (self.get(f"{canonicalize_name(name)}/{version}") or {}).get("info") or {}
        if info:
            return Release(canonicalize_name(name), version, tuple(r for r in info.get("requires_dist") or () if isinstance(r, str)), python_range(info.get("requires_python")))
        wheels = [f for f in self.files(name, version) if str(f.get("filename", "")).endswith(".whl")]
        if not wheels or not self.reachable:
            return None
        url = urllib.parse.urljoin(f"{self.url}/{canonicalize_name(name)}/json", str(wheels[0].get("url"))) + ".metadata"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout_s) as response:
                return parse_metadata(response.read(MAX_METADATA_BYTES).decode("utf-8", "replace"), name, version)
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def files(self, name: str, version: Version) -> List[dict]:
        releases = (self.get(canonicalize_name(name)) or {}).get("releases") or {}
        return next((files for text, files in releases.items() if text == str(version)), [])
