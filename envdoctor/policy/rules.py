"""The policy's rules as checks: each a pure function of the policy and a report's facts.

A rule whose fact is missing from the report (an older report, a GPU tool that does not say free
memory) yields an info finding that it could not be judged: a rule not judged is never a rule passed.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterator, List, Mapping, Optional, Sequence, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.checks import Check
from envdoctor.facts import view_of
from envdoctor.facts.environ import EnvironView
from envdoctor.facts.gpu import GpuView
from envdoctor.facts.memory import MemoryView
from envdoctor.facts.target import TargetView, parse_version
from envdoctor.knowledge.drivers import DRIVER_DOWNLOAD
from envdoctor.knowledge.torch_matrix import INDEX_ROOT
from envdoctor.model import Finding, Remedy, Severity
from envdoctor.policy.load import Policy
from envdoctor.words import gib

GIB = 2**30
Facts = Mapping[str, Any]


def violation(policy: Policy, section: str, check_id: str, title: str, evidence: Mapping[str, Any], remedies: Sequence[Remedy] = (), explanation: str = "") -> Finding:
    """A broken rule at the section's severity, the team's own remedy first."""
    rules = policy.sections[section]
    team = (Remedy(rules.remedy),) if rules.remedy else ()
    return Finding(
        id=check_id,
        severity=rules.severity,
        title=title,
        explanation=explanation,
        evidence={"policy": policy.source, **evidence},
        remedies=(*team, *remedies),
    )


def unjudged(policy: Policy, check_id: str, missing: str) -> Finding:
    return Finding(
        id=check_id,
        severity=Severity.INFO,
        title=f"{missing} was not recorded, so this policy rule could not be judged",
        evidence={"policy": policy.source},
        remedies=(Remedy("Run `envdoctor check` again on the machine itself with this version of envdoctor."),),
    )


def recorded_torch(facts: Facts) -> Optional[str]:
    """The installed torch's version as torch reports it (`2.5.1+cu124`), or None without torch."""
    target = view_of(facts, TargetView)
    build, dist = target.torch_facts, target.distributions.get("torch") or {}
    return build.get("version") or dist.get("version")


def torch_install(facts: Facts, build: str) -> Remedy:
    """The command that installs `build` from PyTorch's index for its local tag (cu124, cpu)."""
    local = Version(build).local
    index = ["--index-url", f"{INDEX_ROOT}/{local}"] if local else []
    return Remedy(f"Install the team's torch build {build}:", view_of(facts, TargetView).installer_command("install", [f"torch=={build}", *index]))


def torch_build(policy: Policy, facts: Facts) -> Iterator[Finding]:
    allowed = policy.rule("torch", "builds")
    installed = recorded_torch(facts)
    if parse_version(installed) in {Version(build) for build in allowed}:
        return
    found = f"torch {installed} is installed" if installed else "torch is not installed"
    yield violation(
        policy, "torch", "policy.torch-build",
        f"{found}; the policy allows {' or '.join(allowed)}",
        {"installed": installed, "allowed": list(allowed)},
        [torch_install(facts, allowed[0])],
    )


def driver(policy: Policy, facts: Facts) -> Iterator[Finding]:
    minimum = policy.rule("driver", "min_version")
    gpu = view_of(facts, GpuView)
    version = gpu.driver_version
    parsed = parse_version(version)
    if parsed is not None and parsed >= Version(minimum):
        return
    found = f"NVIDIA driver {version} is installed" if version else "No NVIDIA driver was found"
    yield violation(
        policy, "driver", "policy.driver",
        f"{found}; the policy requires {minimum} or newer",
        {"driver": version, "minimum": minimum},
        [Remedy(f"Update the NVIDIA driver to {minimum} or newer ({DRIVER_DOWNLOAD}).")],
        explanation=gpu.reason or "",
    )


def entry(name: str, value: Optional[str]) -> str:
    """An env rule as the policy file writes it: NAME or NAME=VALUE."""
    return name if value is None else f"{name}={value}"


def recorded_variables(facts: Facts) -> Mapping[str, str]:
    return view_of(facts, EnvironView).variables


def env_required(policy: Policy, facts: Facts) -> Iterator[Finding]:
    variables = recorded_variables(facts)
    for name, wanted in policy.rule("env", "required"):
        value = variables.get(name)
        if value is not None and wanted in (None, value):
            continue
        found = f"{name} is not set" if value is None else f"{name} is {value!r}"
        demand = "the policy requires it" if wanted is None else f"the policy requires {entry(name, wanted)}"
        setting = Remedy(f"Set {name} in the job's environment:", f"export {name}={shlex.quote(wanted)}") if wanted is not None else Remedy(f"Set {name} in the job's environment (its batch script or container spec).")
        yield violation(policy, "env", "policy.env-required", f"{found}; {demand}", {"variable": name, "value": value, "required": wanted}, [setting])


def env_forbidden(policy: Policy, facts: Facts) -> Iterator[Finding]:
    variables = recorded_variables(facts)
    for name, banned in policy.rule("env", "forbidden"):
        value = variables.get(name)
        if value is None or banned not in (None, value):
            continue
        yield violation(policy, "env", "policy.env-forbidden", f"{name} is set to {value!r}; the policy forbids {entry(name, banned)}", {"variable": name, "value": value, "forbidden": banned}, [Remedy(f"Remove {name} from the job's environment:", f"unset {name}")])


def below(free: float, minimum_gib: float) -> bool:
    return free < minimum_gib * GIB


def vram(policy: Policy, facts: Facts) -> Iterator[Finding]:
    minimum = policy.rule("memory", "min_free_vram_gb")
    gpus = view_of(facts, GpuView).recorded_gpus
    if not gpus:
        yield violation(policy, "memory", "policy.vram", f"No NVIDIA GPU was found; the policy requires {minimum:g} GiB of free memory on each", {"gpus": 0})
    for gpu in gpus:
        free = gpu.get("memory_free_bytes")
        label = f"GPU {gpu.get('index')} ({gpu.get('name')})"
        if free is None:
            yield unjudged(policy, "policy.vram", f"The free memory of {label}")
        elif below(free, minimum):
            yield violation(
                policy, "memory", "policy.vram",
                f"{label} has {gib(free)} of memory free; the policy requires {minimum:g} GiB",
                {"gpu": gpu.get("index"), "free_bytes": free, "minimum_gib": minimum},
                [Remedy("See which processes hold its memory, and stop the stray ones:", "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv")],
            )


def ram(policy: Policy, facts: Facts) -> Iterator[Finding]:
    minimum = policy.rule("memory", "min_available_ram_gb")
    available = view_of(facts, MemoryView).ram_available_bytes
    if available is None:
        yield unjudged(policy, "policy.ram", "The available RAM")
    elif below(available, minimum):
        yield violation(
            policy, "memory", "policy.ram",
            f"{gib(available)} of RAM is available; the policy requires {minimum:g} GiB",
            {"available_bytes": available, "minimum_gib": minimum},
            [Remedy("Stop what holds the memory, or run on a node with more; the largest processes:", "ps -eo pid,rss,comm --sort=-rss | head")],
        )


def shm(policy: Policy, facts: Facts) -> Iterator[Finding]:
    minimum = policy.rule("memory", "min_free_shm_gb")
    if "shm_free_bytes" not in facts["memory"]:
        yield unjudged(policy, "policy.shm", "The free space of /dev/shm")
        return
    free = facts["memory"]["shm_free_bytes"]
    if free is not None and not below(free, minimum):
        return
    found = f"/dev/shm has {gib(free)} free" if free is not None else "/dev/shm could not be measured"
    yield violation(
        policy, "memory", "policy.shm",
        f"{found}; the policy requires {minimum:g} GiB",
        {"free_bytes": free, "minimum_gib": minimum},
        [
            Remedy("Start the container with more shared memory:", f"docker run --shm-size={math.ceil(minimum)}g ..."),
            Remedy("or find what a crashed run left behind in it:", "ls -la /dev/shm"),
        ],
    )


def packages(policy: Policy, facts: Facts) -> Iterator[Finding]:
    installed = view_of(facts, TargetView).distributions
    for name, spec in policy.rule("packages", "require"):
        version = (installed.get(name) or {}).get("version")
        parsed = parse_version(version)
        if parsed is not None and SpecifierSet(spec).contains(parsed, prereleases=True):
            continue
        found = f"{name} {version} is installed" if version else f"{name} is not installed"
        yield violation(
            policy, "packages", "policy.package",
            f"{found}; the policy requires {name}{spec}",
            {"package": name, "installed": version, "required": spec},
            [Remedy(f"Install {name}{spec}:", view_of(facts, TargetView).installer_command("install", [f"{name}{spec}"]))],
        )


@dataclass(frozen=True)
class Rule:
    """Where a rule sits in the policy file, the check it becomes, and the fact sections it reads."""

    section: str
    key: str
    check_id: str
    requires: Tuple[str, ...]
    judge: Callable[[Policy, Facts], Iterator[Finding]]
    summary: Callable[[Any], str]


RULES = (
    Rule("torch", "builds", "policy.torch-build", ("target",), torch_build, lambda v: f"torch is one of the team's builds: {', '.join(v)}"),
    Rule("driver", "min_version", "policy.driver", ("gpu",), driver, lambda v: f"NVIDIA driver {v} or newer"),
    Rule("env", "required", "policy.env-required", ("environ",), env_required, lambda v: f"set: {', '.join(entry(*e) for e in v)}"),
    Rule("env", "forbidden", "policy.env-forbidden", ("environ",), env_forbidden, lambda v: f"not set: {', '.join(entry(*e) for e in v)}"),
    Rule("memory", "min_free_vram_gb", "policy.vram", ("gpu",), vram, lambda v: f"at least {v:g} GiB free on each GPU"),
    Rule("memory", "min_available_ram_gb", "policy.ram", ("memory",), ram, lambda v: f"at least {v:g} GiB of RAM available"),
    Rule("memory", "min_free_shm_gb", "policy.shm", ("memory",), shm, lambda v: f"at least {v:g} GiB free in /dev/shm"),
    Rule("packages", "require", "policy.package", ("target",), packages, lambda v: f"installed: {', '.join(n + s for n, s in v)}"),
)


def checks_for(policy: Policy) -> List[Check]:
    """One check for each rule the policy sets, run like any other check (by the check runner)."""
    return [
        Check(rule.check_id, f"Policy: {rule.summary(value)}", rule.requires, partial(rule.judge, policy))
        for rule in RULES
        for value in [policy.rule(rule.section, rule.key)]
        if value is not None
    ]
