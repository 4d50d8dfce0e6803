"""The rest of the differences: every other package, environment variable and host fact that differs.

Shown collapsed after the ranked aspects: rarely the cause, but what a maintainer scans when the
ranked list comes up empty. What an aspect already covers is left out so nothing is said twice.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, List, Mapping, Optional, Tuple

from envdoctor.checks import conda
from envdoctor.compare.aspects import PACKAGES_READ, VARIABLES_READ
from envdoctor.compare.model import Change
from envdoctor.compare.readers import UNUSABLE, Facts, Unrecorded, distribution_versions, section
from envdoctor.words import gib


def text(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def container(markers: Mapping[str, Any]) -> Optional[str]:
    found = [name for name, present in markers.items() if present is True] + list(markers.get("cgroup", ()))
    return ", ".join(found) or None


# (section, fact name shown, how to read it from the section)
HOST_FACTS: Tuple[Tuple[str, str, Callable[[Mapping], Optional[str]]], ...] = (
    ("system", "distribution", lambda s: text(s.get("distro", {}).get("PRETTY_NAME"))),
    ("system", "container", lambda s: container(s.get("container", {}))),
    ("system", "libcuda outside WSL", lambda s: text(" ".join(s.get("libcuda_outside_wsl", ())) or None)),
    ("target", "Python version", lambda s: text(s.get("python", {}).get("version"))),
    ("target", "Python implementation", lambda s: text(s.get("python", {}).get("implementation"))),
    ("target", "free-threaded Python", lambda s: text(s.get("python", {}).get("gil_disabled"))),
    ("target", "conda environment", lambda s: text(s.get("python", {}).get("conda_prefix"))),
    ("target", "torch git version", lambda s: text((s.get("torch_build") or {}).get("git_version"))),
    ("cpu", "CPU model", lambda s: text(s.get("model"))),
    ("cpu", "usable CPUs", lambda s: text(s.get("usable_cpus"))),
    ("cpu", "logical cores", lambda s: text(s.get("logical_cores"))),
    ("memory", "RAM", lambda s: gib(s.get("ram_total_bytes"), None)),
    ("memory", "swap", lambda s: gib(s.get("swap_total_bytes"), None)),
    ("memory", "/dev/shm", lambda s: gib(s.get("shm_total_bytes"), None)),
    ("gpu", "GPU facts source", lambda s: text(s.get("source"))),
    ("gpu", "GPU memory", lambda s: " ".join(filter(None, (gib(g.get("memory_total_bytes"), None) for g in s.get("gpus") or ()))) or None),
)


def recorded(facts: Facts, name: str) -> Optional[Mapping]:
    found = section(facts, name)
    return None if isinstance(found, Unrecorded) else found


def changes(group: str, a: Mapping[str, Optional[str]], b: Mapping[str, Optional[str]]) -> Iterable[Change]:
    """The entries that differ, in A's order, then those only B has."""
    for name in [*a, *(n for n in b if n not in a)]:
        if a.get(name) != b.get(name):
            yield Change(group, name, a.get(name), b.get(name))


def shaped(read: Callable[[], Mapping[str, Any]]) -> Mapping[str, str]:
    """What `read` finds, keeping text values only: a recorded report of another shape lists nothing."""
    try:
        return {k: v for k, v in read().items() if isinstance(v, str)}
    except UNUSABLE:
        return {}


def packages(facts: Facts) -> Mapping[str, str]:
    target = recorded(facts, "target") or {}
    found = shaped(lambda: distribution_versions(target))
    return {name: found[name] for name in sorted(found) if name not in PACKAGES_READ}


def conda_packages(facts: Facts) -> Mapping[str, str]:
    """What conda installed, name -> "version (channel::build)", listed as pip's packages are."""
    target = recorded(facts, "target") or {}
    found = conda.records({"target": target})
    return {name: f"{r.get('version')} ({r.get('channel') or '?'}::{r.get('build') or '?'})" for name, r in sorted(found.items())}


def variables(facts: Facts) -> Mapping[str, str]:
    environ = recorded(facts, "environ") or {}
    return {n: v for n, v in shaped(lambda: environ.get("variables", {})).items() if n not in VARIABLES_READ}


def host_fact(read: Callable[[Mapping], Optional[str]], found: Mapping) -> Optional[str]:
    try:
        return read(found)
    except UNUSABLE:
        return None


def host_facts(facts: Facts, names: Iterable[str]) -> Mapping[str, Optional[str]]:
    """Host facts of the sections both reports record (a missing section, or one of an unexpected
    shape where the fact is read, is not a difference)."""
    return {label: host_fact(read, recorded(facts, name)) for name, label, read in HOST_FACTS if name in names}


def other_differences(facts_a: Facts, facts_b: Facts) -> List[Change]:
    both = [name for name in {s for s, _, _ in HOST_FACTS} if recorded(facts_a, name) and recorded(facts_b, name)]
    found = list(changes("host fact", host_facts(facts_a, both), host_facts(facts_b, both)))
    if recorded(facts_a, "target") and recorded(facts_b, "target"):
        found += changes("package", packages(facts_a), packages(facts_b))
        found += changes("conda package", conda_packages(facts_a), conda_packages(facts_b))
    if recorded(facts_a, "environ") and recorded(facts_b, "environ"):
        found += changes("variable", variables(facts_a), variables(facts_b))
    return found
