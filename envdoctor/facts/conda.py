"""The conda view of the target (target/conda.py's `target["conda"]`): which records conda installed,
which pip distributions conda owns, the CUDA majors and OpenMP runtimes on each side.

target/conda.py reads conda-meta files that any tool may have written, so this view reads them
leniently (a record that is not a mapping is skipped) instead of refusing the whole target.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple, Union

from envdoctor.facts import Unrecorded
from envdoctor.facts.target import TargetView, normalize

CUDA_VERSIONED = re.compile(r"^(cudatoolkit|pytorch-cuda|cuda-.+)$")
BUILD_CUDA = re.compile(r"(?:^|[_.-])cuda_?(\d+)(?:\.\d+)?")
CUDA_VERSION_DEPENDENCY = re.compile(r"^cuda-version\s*[<>=!~ ]*\s*(\d+)")
CONDA_TORCH = ("pytorch", "pytorch-gpu", "pytorch-cpu")
RUNTIME_NAME = re.compile(r"^(libgomp|libiomp5|libomp)[-.]")
Record = Mapping[str, Any]


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def listing(value: Any) -> list:
    return value if isinstance(value, list) else []


def shown(record: Record) -> str:
    return f"{record.get('name')} {record.get('version')} ({record.get('channel') or '?'}::{record.get('build') or '?'})"


def record_cuda_major(record: Record) -> Optional[str]:
    """The CUDA major a conda package belongs to: its version for the CUDA packages themselves, its
    cuda-version dependency, or the cudaXY of its build string (pytorch, cudnn, nccl)."""
    name, version = str(record.get("name")), str(record.get("version"))
    if CUDA_VERSIONED.match(name) and version.split(".", 1)[0].isdigit():
        return version.split(".", 1)[0]
    for dependency in listing(record.get("depends")):
        match = CUDA_VERSION_DEPENDENCY.match(str(dependency))
        if match:
            return match.group(1)
    match = BUILD_CUDA.search(str(record.get("build")))
    if match:
        digits = match.group(1)
        return digits[:-1] if len(digits) >= 3 else digits
    return None


def runtime_of(library: str) -> Optional[str]:
    match = RUNTIME_NAME.match(library)
    return match.group(1) if match else None


def dist_info_identity(prefix: str, entry: str) -> Optional[Tuple[str, str, str]]:
    """(location, normalized name, version) of a dist-info/egg-info folder a conda record lists."""
    path = os.path.join(prefix, entry)
    stem = os.path.basename(path).rsplit(".", 1)[0]
    name, _, rest = stem.partition("-")
    return (os.path.dirname(path), normalize(name), rest.split("-", 1)[0]) if name and rest else None


def conda_state(value: Any) -> Optional[Unrecorded]:
    """Why the target records no usable conda facts (an older report, a failed reader), or None."""
    if not isinstance(value, Mapping):
        return Unrecorded("no conda facts in the report (written before envdoctor read conda environments)", "target")
    if "error" in value:
        return Unrecorded(f"conda facts failed: {value['error']}", "target", failure=str(value["error"]))
    return None


@dataclass(frozen=True)
class CondaView:
    """target["conda"] beside the target's distributions; `found` is {} where conda facts are missing
    or failed (`unrecorded` says which)."""

    SECTION = "target"
    target: TargetView = field(default_factory=TargetView)
    found: Mapping[str, Any] = field(default_factory=dict)
    unrecorded: Optional[Unrecorded] = None
    raw_distributions: Tuple[Any, ...] = ()

    @classmethod
    def from_json(cls, section: Mapping[str, Any]) -> Union["CondaView", Unrecorded]:
        target = TargetView.from_json(section)
        if isinstance(target, Unrecorded):
            return target
        state = conda_state(section.get("conda"))
        found = {} if state else section["conda"]
        return cls(target, found, state, tuple(listing(section.get("distributions")) + listing(section.get("shadowed_distributions"))))

    @property
    def environment(self) -> Mapping[str, Any]:
        """The conda facts when the diagnosed interpreter is a conda environment, else {}."""
        return self.found if self.found.get("prefix") else {}

    @cached_property
    def records(self) -> Dict[str, Record]:
        """The environment's conda records by package name."""
        return {str(r.get("name")): r for r in map(mapping, listing(self.environment.get("records"))) if r.get("name")}

    @property
    def manager(self) -> str:
        return str(mapping(self.environment.get("manager")).get("path") or "conda")

    @cached_property
    def conda_owned(self) -> Set[Tuple[str, str, str]]:
        """The Python distributions conda installed, as (location, name, version)."""
        prefix = str(self.environment.get("prefix") or "")
        owned = set()
        for record in self.records.values():
            for entry in listing(record.get("python_dists")):
                identity = dist_info_identity(prefix, str(entry))
                if identity:
                    owned.add(identity)
        return owned

    def installed_by(self, dist: Mapping[str, Any]) -> str:
        """ "conda" when a conda record put this distribution there, else "pip" (pip, uv or setup.py)."""
        identity = (str(dist.get("location")), normalize(str(dist.get("name"))), str(dist.get("version")))
        return "conda" if identity in self.conda_owned else "pip"

    @property
    def all_distributions(self) -> List[Mapping[str, Any]]:
        """Every distribution the target scan saw, those shadowed by an earlier one on sys.path included."""
        return [mapping(d) for d in self.raw_distributions]

    @property
    def conda_torch(self) -> Optional[Record]:
        return next((self.records[name] for name in CONDA_TORCH if name in self.records), None)

    @property
    def loaded_torch(self) -> Optional[Mapping[str, Any]]:
        """The torch distribution `import torch` finds: the first on sys.path, as the target scan records it."""
        return next((d for d in self.target.distribution_list if normalize(d["name"]) == "torch"), None)

    @property
    def torch_installer(self) -> Optional[str]:
        """Who installed the torch that loads: "conda", "pip", or None without torch."""
        torch = self.loaded_torch
        return self.installed_by(torch) if torch else None

    def conda_cuda_majors(self) -> Dict[str, List[Record]]:
        grouped: Dict[str, List[Record]] = {}
        for name, record in sorted(self.records.items()):
            major = record_cuda_major(record)
            if major:
                grouped.setdefault(major, []).append(record)
        return grouped

    def pip_cuda_majors(self) -> Dict[str, List[Mapping[str, Any]]]:
        """pip's NVIDIA wheels by CUDA major ("cu12" -> "12"), those conda put there left out."""
        grouped: Dict[str, List[Mapping[str, Any]]] = {}
        for family, dists in self.target.families.items():
            pip_only = [d for d in dists if self.installed_by(d) == "pip"]
            if pip_only:
                grouped.setdefault(family[2:], []).extend(pip_only)
        return grouped

    def conda_openmp(self) -> Dict[str, List[str]]:
        """OpenMP runtime -> the conda packages that install it (read from the records' library lists)."""
        found: Dict[str, List[str]] = {}
        for name, record in sorted(self.records.items()):
            for runtime in {runtime_of(str(lib)) for lib in listing(record.get("libraries"))} - {None}:
                found.setdefault(runtime, []).append(shown(record))
        return found

    def pip_openmp(self) -> Dict[str, List[str]]:
        """OpenMP runtime -> the libraries pip wheels bundle (torch/lib/libgomp-*.so.1, scikit_learn.libs/...)."""
        found: Dict[str, List[str]] = {}
        for folder in map(mapping, listing(self.environment.get("bundled_runtimes"))):
            for library in listing(folder.get("libraries")):
                runtime = runtime_of(str(library))
                if runtime:
                    found.setdefault(runtime, []).append(os.path.join(str(folder.get("folder")), str(library)))
        return found
