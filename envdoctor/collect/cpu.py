"""CPU facts: model, cores, the CPUs this process may really use, and instruction-set flags.

On Linux the flags come straight from /proc/cpuinfo (what py-cpuinfo reads there too), which keeps
`check` fast and lets ENVDOCTOR_ROOT present another CPU; where there is no /proc at all (macOS,
Windows, or an ENVDOCTOR_ROOT without one) py-cpuinfo does the probing.
"""

from __future__ import annotations

import math
import os
import platform
from typing import Optional

from envdoctor import host


def parse_cpuinfo(text: str) -> dict:
    """Model name, logical and physical core counts and the flags of the first processor in /proc/cpuinfo."""
    model, flags, processors, cores, package = None, [], 0, set(), "0"
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "processor":
            processors += 1
        elif key == "physical id":
            package = value.strip()
        elif key == "core id":
            cores.add((package, value.strip()))
        elif key in ("model name", "Model", "cpu model") and model is None:
            model = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = value.split()
    return {"model": model, "logical": processors or None, "physical": len(cores) or None, "flags": sorted(set(flags))}


def cgroup_cpu_limit() -> Optional[float]:
    """CPUs granted by a cgroup CPU quota (v2 cpu.max, else v1 cfs quota), None when unlimited."""
    quota_period = (host.read_text("/sys/fs/cgroup/cpu.max") or "").split()
    if len(quota_period) == 2 and quota_period[0] != "max":
        return int(quota_period[0]) / int(quota_period[1])
    quota = (host.read_text("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") or "").strip()
    period = (host.read_text("/sys/fs/cgroup/cpu/cpu.cfs_period_us") or "").strip()
    if quota.lstrip("-").isdigit() and period.isdigit() and int(quota) > 0:
        return int(quota) / int(period)
    return None


def affinity_count() -> Optional[int]:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def usable_cpus(logical: Optional[int], affinity: Optional[int], quota: Optional[float]) -> Optional[int]:
    """What a thread pool can really keep busy: the tightest of cores, affinity and quota."""
    limits = [n for n in (logical, affinity, math.ceil(quota) if quota else None) if n]
    return min(limits) if limits else None


def portable_facts() -> dict:
    """Where there is no /proc (macOS, Windows): py-cpuinfo and psutil, imported only here because
    py-cpuinfo probes CPUID in a child process, which costs about a second. Without psutil (the
    zipapp) the physical core count is unknown."""
    import cpuinfo

    info = cpuinfo.get_cpu_info()
    return {
        "model": info.get("brand_raw") or platform.processor() or None,
        "logical": info.get("count"),
        "physical": physical_cores(),
        "flags": sorted(info.get("flags", [])),
    }


def physical_cores() -> Optional[int]:
    try:
        import psutil
    except ImportError:
        return None
    return psutil.cpu_count(logical=False)


def collect(ctx) -> dict:
    facts = parse_cpuinfo(host.read_text("/proc/cpuinfo") or "") if host.exists("/proc") else portable_facts()
    logical = facts["logical"] or os.cpu_count()
    affinity = None if host.is_rerooted() else affinity_count()
    quota = cgroup_cpu_limit()
    return {
        "model": facts["model"],
        "arch": os.uname().machine if hasattr(os, "uname") else None,
        "logical_cores": logical,
        "physical_cores": facts["physical"],
        "affinity_cpus": affinity,
        "cgroup_cpu_quota": quota,
        "usable_cpus": usable_cpus(logical, affinity, quota),
        "flags": facts["flags"],
    }
