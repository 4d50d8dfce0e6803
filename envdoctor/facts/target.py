"""The diagnosed interpreter's view (target/facts.py): its Python, installed distributions, torch's
build and installers, and what follows from them (the Python minor, the CUDA wheel families, the exact
pip command for this interpreter)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from packaging.markers import default_environment
from packaging.utils import canonicalize_name as normalize
from packaging.version import InvalidVersion, Version

from envdoctor.facts import Unrecorded, expect, shaped
from envdoctor.knowledge import wheels

__all__ = ["TargetView", "TorchBuild", "normalize", "parse_version"]
PLATFORM_SYSTEMS = {"linux": "Linux", "win32": "Windows", "darwin": "Darwin"}


def parse_version(text: Optional[str]) -> Optional[Version]:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


@dataclass(frozen=True)
class TorchBuild:
    """The installed torch: its distribution version, torch/version.py's view, and the CUDA it targets."""

    version: str
    build_version: str
    cuda: Optional[str]
    hip: Optional[str]

    @property
    def is_cpu(self) -> bool:
        return not self.cuda and not self.hip


def python_facts(value: Any) -> Mapping[str, Any]:
    python = expect(value, Mapping, {})
    expect(python.get("version_info"), list, [])
    for name in ("version", "executable", "platform", "machine"):
        expect(python.get(name), str, "")
    return python


def torch_build_facts(value: Any) -> Mapping[str, Any]:
    build = expect(value, Mapping, {})
    for name in ("version", "cuda", "hip"):
        expect(build.get(name), (str, type(None)))
    return build


def torch_kernels_facts(value: Any) -> Mapping[str, Any]:
    """What collect/fatbin.py read from torch's CUDA libraries: an arch list of flags, or an error."""
    kernels = expect(value, Mapping, {})
    for flag in expect(kernels.get("arch_list"), list, []):
        expect(flag, str)
    expect(kernels.get("error"), (str, type(None)))
    return kernels


def numpy_builds_facts(value: Any) -> Mapping[str, Mapping[str, Any]]:
    """What collect/numpy_builds.py read: distribution name -> {"numpy": "1" or "2", "extension": path}."""
    builds = expect(value, Mapping, {})
    for name, build in builds.items():
        expect(name, str)
        expect(expect(build, Mapping).get("numpy"), str)
    return {normalize(name): build for name, build in builds.items()}


def distribution(entry: Any) -> Mapping[str, Any]:
    expect(entry, Mapping)
    expect(entry["name"], str)
    expect(entry.get("version", ""), str)
    return entry


def pth_error(entry: Any) -> Mapping[str, Any]:
    """A .pth line site could not process: its file as text, its line number, the error it ended in."""
    expect(entry, Mapping)
    expect(entry["pth"], str)
    expect(entry["line"], int)
    expect(entry["error"], str)
    return entry


def leftover(entry: Any) -> Mapping[str, Any]:
    """One of pip's `~` leftovers: its folder and entry as text, the name its metadata gives or None."""
    expect(entry, Mapping)
    expect(entry["location"], str)
    expect(entry["entry"], str)
    expect(entry.get("name"), (str, type(None)))
    return entry


@dataclass(frozen=True)
class TargetView:
    """The target section, its shapes checked: `python` and `torch_facts` are mappings, every
    distribution a mapping with a text name and version."""

    SECTION = "target"
    python: Mapping[str, Any] = field(default_factory=dict)
    distribution_list: Tuple[Mapping[str, Any], ...] = ()
    shadowed: Tuple[Mapping[str, Any], ...] = ()
    leftovers: Tuple[Mapping[str, Any], ...] = ()
    pth_errors: Tuple[Mapping[str, Any], ...] = ()
    torch_facts: Mapping[str, Any] = field(default_factory=dict)
    torch_kernels: Mapping[str, Any] = field(default_factory=dict)
    numpy_builds: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    installers: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, section: Mapping[str, Any]) -> Union["TargetView", Unrecorded]:
        return shaped(cls.SECTION, lambda: cls(
            python=python_facts(section.get("python")),
            distribution_list=tuple(distribution(d) for d in expect(section.get("distributions"), list, [])),
            shadowed=tuple(expect(section.get("shadowed_distributions"), list, [])),
            leftovers=tuple(leftover(entry) for entry in expect(section.get("pip_leftovers"), list, [])),
            pth_errors=tuple(pth_error(entry) for entry in expect(section.get("pth_errors"), list, [])),
            torch_facts=torch_build_facts(section.get("torch_build")),
            torch_kernels=torch_kernels_facts(section.get("torch_kernels")),
            numpy_builds=numpy_builds_facts(section.get("numpy_builds")),
            installers=expect(section.get("installers"), Mapping, {}),
        ))

    @cached_property
    def distributions(self) -> Dict[str, Mapping[str, Any]]:
        """The installed distributions by normalized name."""
        return {normalize(d["name"]): d for d in self.distribution_list}

    def version_of(self, name: str) -> Optional[str]:
        dist = self.distributions.get(normalize(name))
        return dist.get("version", "") if dist else None

    def installed_version(self, name: str) -> Optional[Version]:
        return parse_version(self.version_of(name))

    @property
    def python_version(self) -> Optional[str]:
        return self.python.get("version")

    @property
    def python_minor(self) -> Optional[str]:
        """ "3.12", or None where the report does not say."""
        info = self.python.get("version_info") or []
        return f"{info[0]}.{info[1]}" if len(info) >= 2 else None

    @property
    def executable(self) -> str:
        """The diagnosed interpreter, as commands name it ("python" where unknown)."""
        return self.python.get("executable") or "python"

    @property
    def platform(self) -> str:
        return self.python.get("platform") or "linux"

    @property
    def host_os(self) -> str:
        """ "windows" or "linux": whose driver table applies."""
        return "windows" if self.platform.startswith("win") else "linux"

    @cached_property
    def torch_build(self) -> Optional[TorchBuild]:
        dist = self.distributions.get("torch")
        if not self.torch_facts or not dist:
            return None
        build = self.torch_facts
        return TorchBuild(dist["version"], build.get("version") or dist["version"], build.get("cuda") or None, build.get("hip") or None)

    @cached_property
    def families(self) -> Dict[str, List[Mapping[str, Any]]]:
        """Installed NVIDIA CUDA wheels by family ("cu12": [dist, ...]), in name order."""
        grouped: Dict[str, List[Mapping[str, Any]]] = {}
        for name, dist in sorted(self.distributions.items()):
            family = wheels.cuda_family(name, dist.get("version"))
            if family:
                grouped.setdefault(family, []).append(dist)
        return grouped

    def installer_command(self, verb: str, args: Sequence[str]) -> str:
        """The exact command that runs pip `verb` for this interpreter (uv's pip where it has no pip)."""
        quoted = " ".join(shlex.quote(a) for a in args)
        if not self.installers.get("pip") and self.installers.get("uv"):
            return f"{shlex.quote(self.installers['uv'])} pip {verb} --python {shlex.quote(self.executable)} {quoted}"
        flag = " -y" if verb == "uninstall" else ""
        return f"{shlex.quote(self.executable)} -m pip {verb}{flag} {quoted}"

    def marker_environment(self) -> Dict[str, str]:
        """PEP 508 marker values of this interpreter, so its requirements are read as pip reads them."""
        environment = dict(default_environment())
        text = {key: value for key, value in self.python.items() if isinstance(value, str) and value}  # a recorded non-text says nothing
        info = self.python.get("version_info")
        if isinstance(info, list) and len(info) >= 2:
            environment["python_version"] = f"{info[0]}.{info[1]}"
            environment["python_full_version"] = text.get("version", environment["python_full_version"])
        platform = text.get("platform")
        if platform:
            environment["sys_platform"] = platform
            environment["platform_system"] = PLATFORM_SYSTEMS.get(platform, platform)
        if text.get("machine"):
            environment["platform_machine"] = text["machine"]
        environment["extra"] = ""
        return environment
