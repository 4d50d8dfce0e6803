"""The host's view (collect/system.py): OS, kernel, glibc, and whether this is WSL1, WSL2 or neither.

WSL markers and rules: docs/knowledge/domain-facts.md §5. Custom WSL2 kernels can carry any release string
(sindresorhus/is-wsl#13), so the kind is judged from every marker together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Mapping, Optional, Tuple, Union

from envdoctor.facts import Unrecorded, expect, shaped

# Only a WSL kernel or a WSL filesystem makes a WSL verdict: the variables travel with copied
# environments and into containers started from a WSL shell, whatever kernel runs them.
KERNEL_WORDS = ("microsoft", "wsl")
FILESYSTEM_MARKERS = ("/usr/lib/wsl", "/usr/lib/wsl/lib", "/run/WSL", "/proc/sys/fs/binfmt_misc/WSLInterop", "/dev/dxg")
VARIABLE_MARKERS = ("WSL_DISTRO_NAME", "WSL_INTEROP")
WSL2_ONLY_MARKERS = ("WSL_INTEROP", "/dev/dxg", "/usr/lib/wsl", "/usr/lib/wsl/lib", "/run/WSL")


def container_markers(value: Any) -> Mapping[str, Any]:
    """Marker name -> whether it was seen, and "cgroup": the container runtimes /proc/1/cgroup names."""
    markers = expect(value, Mapping, {})
    runtimes = [expect(name, str) for name in expect(markers.get("cgroup"), list, [])]
    return {**markers, "cgroup": runtimes}


@dataclass(frozen=True)
class SystemView:
    """The system section, its shapes checked: text where text is read, mappings where markers are."""

    SECTION = "system"
    os: Optional[str] = None
    machine: Optional[str] = None
    kernel_release: Optional[str] = None
    proc_version: Optional[str] = None
    glibc: Optional[str] = None
    distro: Mapping[str, Any] = field(default_factory=dict)
    container: Mapping[str, Any] = field(default_factory=dict)
    wsl_markers: Mapping[str, Any] = field(default_factory=dict)
    libcuda_outside_wsl: Tuple[str, ...] = ()

    @classmethod
    def from_json(cls, section: Mapping[str, Any]) -> Union["SystemView", Unrecorded]:
        return shaped(cls.SECTION, lambda: cls(
            os=expect(section.get("os"), (str, type(None))),
            machine=expect(section.get("machine"), (str, type(None))),
            kernel_release=expect(section.get("kernel_release"), (str, type(None))),
            proc_version=expect(section.get("proc_version"), (str, type(None))),
            glibc=expect(section.get("glibc"), (str, type(None))),
            distro=expect(section.get("distro"), Mapping, {}),
            container=container_markers(section.get("container")),
            wsl_markers=expect(section.get("wsl_markers"), Mapping, {}),
            libcuda_outside_wsl=tuple(expect(path, str) for path in expect(section.get("libcuda_outside_wsl"), list, [])),
        ))

    @property
    def host_os(self) -> str:
        """ "windows" or "linux": whose driver table applies."""
        return "windows" if self.os == "Windows" else "linux"

    @property
    def kernel_says_wsl(self) -> bool:
        texts = (self.kernel_release or "", self.proc_version or "")
        return any(word in text.lower() for text in texts for word in KERNEL_WORDS)

    @property
    def filesystem_says_wsl(self) -> bool:
        return any(self.wsl_markers.get(marker) for marker in FILESYSTEM_MARKERS)

    @property
    def wsl_kind(self) -> Optional[str]:
        """"wsl1", "wsl2" or None, from the kernel release, /proc/version and the other markers."""
        if not (self.kernel_says_wsl or self.filesystem_says_wsl):
            return None
        release = self.kernel_release or ""
        if "microsoft-standard" in release.lower() or "WSL2" in release:
            return "wsl2"
        if "Microsoft" in release:
            return "wsl1"
        if any(self.wsl_markers.get(m) for m in WSL2_ONLY_MARKERS):
            return "wsl2"
        # WSL1 always runs Microsoft's own kernel, so a WSL filesystem beside a foreign release means WSL2.
        return "wsl1" if "Microsoft" in (self.proc_version or "") else "wsl2"

    @property
    def wsl_variables(self) -> List[str]:
        return [name for name in VARIABLE_MARKERS if self.wsl_markers.get(name)]

    @property
    def seen_markers(self) -> List[str]:
        return sorted(name for name, present in self.wsl_markers.items() if present)
