"""The site's rules: pure functions from a report's facts (and a setting) to findings.

Each reads the facts through envdoctor's typed views (envdoctor.checks.facts), starts nothing and
reads no environment, so a report recorded on a node is judged the same on a laptop.
"""

from __future__ import annotations

import os
import shlex
from typing import Any, Iterator, Mapping, Optional, Sequence

from envdoctor.checks.facts import parse_version, variables
from envdoctor.checks.wheels import torch_build
from envdoctor.collect.disk import PATHS_VARIABLE
from envdoctor.model import Finding, Remedy, Severity
from envdoctor.policy.rules import torch_install
from envdoctor.words import gib

Facts = Mapping[str, Any]
GIB = 2**30
RENDEZVOUS = ("MASTER_ADDR", "MASTER_PORT", "NCCL_SOCKET_IFNAME")


def driver_branch(facts: Facts, minimum: int) -> Iterator[Finding]:
    """The cluster's driver branch (the major version: 550 of 550.54.15) or a newer one."""
    version = (facts["gpu"].get("driver") or {}).get("version")
    parsed = parse_version(version)
    if parsed is not None and parsed.major >= minimum:
        return
    found = f"NVIDIA driver {version} is installed" if version else "No NVIDIA driver was found"
    yield Finding(
        id="site.driver-branch",
        severity=Severity.ERROR,
        title=f"{found}; this cluster requires driver branch {minimum} or newer",
        explanation=facts["gpu"].get("reason", ""),
        evidence={"driver": version, "minimum_branch": minimum},
        remedies=(Remedy(f"Drain this node and ask the cluster admins to install driver branch {minimum} or newer."),),
    )


def world_size(value: Optional[str]) -> Optional[int]:
    try:
        return int(value) if value is not None else 1
    except ValueError:
        return None


def distributed_env(facts: Facts) -> Iterator[Finding]:
    """A job with WORLD_SIZE > 1 rendezvous at MASTER_ADDR:MASTER_PORT over NCCL_SOCKET_IFNAME: without
    them it hangs at init_process_group, or NCCL picks a wrong interface (docker0, lo) and hangs later."""
    recorded = variables(facts)
    size = world_size(recorded.get("WORLD_SIZE"))
    if size is None:
        yield Finding(
            id="site.distributed-env",
            severity=Severity.ERROR,
            title=f"WORLD_SIZE is {recorded['WORLD_SIZE']!r}, not a number of processes",
            evidence={"WORLD_SIZE": recorded["WORLD_SIZE"]},
            remedies=(Remedy("Let the launcher set it (torchrun, srun), or set the total number of processes:", "export WORLD_SIZE=2"),),
        )
        return
    missing = [name for name in RENDEZVOUS if not recorded.get(name)] if size > 1 else []
    if missing:
        yield Finding(
            id="site.distributed-env",
            severity=Severity.ERROR,
            title=f"A job of {size} processes without {', '.join(missing)}",
            explanation="torch.distributed meets its peers at MASTER_ADDR:MASTER_PORT; NCCL_SOCKET_IFNAME names the cluster network, so NCCL does not pick a container or loopback interface.",
            evidence={"WORLD_SIZE": size, "missing": missing},
            remedies=(Remedy("Set them in the batch script before the launcher, e.g.:", "export MASTER_ADDR=$(hostname) MASTER_PORT=29500 NCCL_SOCKET_IFNAME=ib0"),),
        )


def forbidden_env(facts: Facts, forbidden: Sequence[str]) -> Iterator[Finding]:
    """Variables production jobs must not carry: NAME (any value) or NAME=VALUE."""
    recorded = variables(facts)
    for entry in forbidden:
        name, equals, banned = entry.partition("=")
        value = recorded.get(name)
        if value is not None and (not equals or value == banned):
            yield Finding(
                id="site.forbidden-env",
                severity=Severity.WARNING,
                title=f"{name}={value} is set; production jobs here must not set {entry}",
                evidence={"variable": name, "value": value},
                remedies=(Remedy("Remove it from the job's environment:", f"unset {name}"),),
            )


def torch_standard(facts: Facts, wanted: str) -> Iterator[Finding]:
    """The torch build (version and CUDA tag, 2.5.1+cu124) the team standardised on."""
    build = torch_build(facts)
    installed = build.build_version if build else None
    if parse_version(installed) == parse_version(wanted):
        return
    found = f"torch {installed} is installed" if installed else "torch is not installed"
    yield Finding(
        id="site.torch-build",
        severity=Severity.ERROR,
        title=f"{found}; the team's build is {wanted}",
        evidence={"installed": installed, "standard": wanted},
        remedies=(torch_install(facts, wanted),),
    )


def recorded_folder(facts: Facts, folder: str) -> Optional[Mapping[str, Any]]:
    return next((entry for entry in facts["disk"].get("folders", ()) if os.path.normpath(entry["path"]) == folder), None)


def checkpoint_space(facts: Facts, folder: str, minimum_gb: float) -> Iterator[Finding]:
    """At least `minimum_gb` free where checkpoints are written: a full disk fails a run at its first save."""
    entry = recorded_folder(facts, folder)
    if entry is None:
        yield Finding(
            id="site.checkpoint-disk",
            severity=Severity.INFO,
            title=f"The free space of {folder} was not recorded, so the checkpoint folder could not be judged",
            remedies=(Remedy("Have envdoctor measure it:", f"{PATHS_VARIABLE}={shlex.quote(folder)} envdoctor check"),),
        )
    elif "error" in entry:
        yield Finding(
            id="site.checkpoint-disk",
            severity=Severity.ERROR,
            title=f"The checkpoint folder {folder} cannot be used: {entry['error']}",
            evidence={"folder": folder, "error": entry["error"]},
            remedies=(Remedy("Create it (or mount the checkpoint volume):", f"mkdir -p {shlex.quote(folder)}"),),
        )
    elif entry["free_bytes"] < minimum_gb * GIB:
        yield Finding(
            id="site.checkpoint-disk",
            severity=Severity.ERROR,
            title=f"{gib(entry['free_bytes'])} free in the checkpoint folder {folder}; the site requires {minimum_gb:g} GiB",
            evidence={"folder": folder, "free_bytes": entry["free_bytes"], "total_bytes": entry["total_bytes"], "minimum_gib": minimum_gb},
            remedies=(Remedy("Find the largest old checkpoints:", f"du -sh {shlex.quote(folder)}/* | sort -h | tail"),),
        )
