"""Memory facts: RAM, swap and the size of /dev/shm (where DataLoader workers pass tensors)."""

from __future__ import annotations

import os
from typing import Optional, Tuple

from envdoctor import host


def meminfo_bytes(text: Optional[str]) -> dict:
    """/proc/meminfo values in bytes, by field name."""
    values = {}
    for line in (text or "").splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            factor = 1024 if len(parts) > 1 and parts[1] == "kB" else 1
            values[name.strip()] = int(parts[0]) * factor
    return values


def shm_bytes(linux: bool) -> Tuple[Optional[int], Optional[int], Optional[str]]:
    """The size of /dev/shm, how much of it is free, and on Linux (a host with /proc), where it should be,
    why it could not be measured (a container started without it has none)."""
    try:
        stat = os.statvfs(host.path("/dev/shm"))
    except OSError as error:
        return None, None, (error.strerror or str(error)) if linux else None
    return stat.f_frsize * stat.f_blocks, stat.f_frsize * stat.f_bavail, None


def portable_memory() -> tuple:
    """RAM total and available and swap total from psutil; unknown (None) without it (the zipapp off Linux)."""
    try:
        import psutil
    except ImportError:
        return None, None, None
    virtual, swap = psutil.virtual_memory(), psutil.swap_memory()
    return virtual.total, virtual.available, swap.total


def collect(ctx) -> dict:
    meminfo = meminfo_bytes(host.read_text("/proc/meminfo"))
    linux = "MemTotal" in meminfo
    if linux:
        ram_total, ram_available = meminfo["MemTotal"], meminfo.get("MemAvailable")
        swap_total = meminfo.get("SwapTotal", 0)
    else:  # no /proc/meminfo: macOS, Windows
        ram_total, ram_available, swap_total = portable_memory()
    shm_total, shm_free, shm_unreadable = shm_bytes(linux)
    found = {
        "ram_total_bytes": ram_total,
        "ram_available_bytes": ram_available,
        "swap_total_bytes": swap_total,
        "shm_total_bytes": shm_total,
        "shm_free_bytes": shm_free,
    }
    if shm_unreadable:
        found["shm_unreadable"] = shm_unreadable
    return found
