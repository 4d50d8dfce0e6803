"""System facts: OS, kernel, distribution, glibc, containers, and WSL1 vs WSL2 from several markers.

Sources for the WSL markers: docs/knowledge/domain-facts.md §5 (microsoft/WSL#423, #4555, #4071; sindresorhus/is-wsl#13).
Custom WSL2 kernels may drop "microsoft" from their release string, so no single marker decides; the
variables are recorded too, though they alone never make a WSL verdict (they travel with copied environments).
"""

from __future__ import annotations

import glob
import os
import platform
from typing import Mapping, Optional

from envdoctor import host

WSL_PATH_MARKERS = (
    "/proc/sys/fs/binfmt_misc/WSLInterop",
    "/run/WSL",
    "/usr/lib/wsl",
    "/usr/lib/wsl/lib",
    "/dev/dxg",
    "/mnt/wslg",
    "/usr/bin/wslinfo",
)
CONTAINER_PATH_MARKERS = ("/.dockerenv", "/run/.containerenv")
CONTAINER_CGROUP_WORDS = ("docker", "kubepods", "containerd", "libpod", "lxc")
# A libcuda outside the WSL driver projection means a Linux driver was installed inside WSL2.
LIBCUDA_GLOBS = (
    "/usr/lib/x86_64-linux-gnu/libcuda.so*",
    "/usr/lib/aarch64-linux-gnu/libcuda.so*",
    "/usr/lib64/libcuda.so*",
    "/usr/lib/libcuda.so*",
    "/usr/local/cuda*/lib64/stubs/libcuda.so*",
)


def parse_os_release(text: Optional[str]) -> dict:
    """The KEY=value pairs of /etc/os-release, unquoted."""
    fields = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.startswith("#"):
            fields[key.strip()] = value.strip().strip("\"'")
    return fields


def glibc_version() -> Optional[str]:
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
        return version if name == "glibc" else None
    except (AttributeError, ValueError, OSError):
        return None


def wsl_markers(environ: Mapping[str, str]) -> dict:
    """Every WSL marker seen, by name, so the verdict can be explained and re-judged later."""
    return {
        "WSL_DISTRO_NAME": "WSL_DISTRO_NAME" in environ,
        "WSL_INTEROP": "WSL_INTEROP" in environ,
        **{marker: host.exists(marker) for marker in WSL_PATH_MARKERS},
    }


def host_globs(patterns) -> list:
    """Host files matching the patterns, shown as absolute host paths (without ENVDOCTOR_ROOT)."""
    root = str(host.root()).rstrip("/")
    found = []
    for pattern in patterns:
        found.extend(p[len(root):] if root else p for p in glob.glob(str(host.path(pattern))))
    return sorted(set(found))


def container_markers() -> dict:
    cgroup = host.read_text("/proc/1/cgroup") or ""
    return {
        **{marker: host.exists(marker) for marker in CONTAINER_PATH_MARKERS},
        "cgroup": sorted(word for word in CONTAINER_CGROUP_WORDS if word in cgroup),
    }


def collect(ctx) -> dict:
    release = (host.read_text("/proc/sys/kernel/osrelease") or "").strip()
    if not release and not host.is_rerooted():
        release = platform.release()
    os_release = parse_os_release(host.read_text("/etc/os-release"))
    return {
        "os": platform.system(),
        "has_proc": host.exists("/proc"),  # False on macOS and Windows: the Linux-only checks are skipped
        "machine": platform.machine(),
        "kernel_release": release,
        "proc_version": (host.read_text("/proc/version") or "").strip(),
        "distro": {k: os_release[k] for k in ("ID", "VERSION_ID", "PRETTY_NAME") if k in os_release},
        "glibc": glibc_version(),
        "container": container_markers(),
        "wsl_markers": wsl_markers(ctx.environ),
        "libcuda_outside_wsl": host_globs(LIBCUDA_GLOBS),
    }
