"""The rest of the differences: every other package, environment variable and host fact that differs.

Shown collapsed after the ranked aspects: rarely the cause, but what a maintainer scans when the
ranked list comes up empty. What an aspect already covers is left out so nothing is said twice.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, List, Mapping, Optional, Tuple

from envdoctor.compare.aspects import PACKAGES_READ, VARIABLES_READ
from envdoctor.compare.model import Change
from envdoctor.compare.readers import distribution_versions
from envdoctor.facts import RawFacts as Facts
from envdoctor.facts import Unrecorded, read
from envdoctor.facts.conda import CondaView
from envdoctor.facts.cpu import CpuView
from envdoctor.facts.environ import EnvironView
from envdoctor.facts.gpu import GpuView
from envdoctor.facts.memory import MemoryView
from envdoctor.facts.system import SystemView
from envdoctor.facts.target import TargetView
from envdoctor.words import gib


def text(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def container(markers: Mapping[str, Any]) -> Optional[str]:
    found = [name for name, present in markers.items() if present is True] + list(markers.get("cgroup", ()))
    return ", ".join(found) or None


# (the view, fact name shown, how to read it from the view)
HOST_FACTS: Tuple[Tuple[type, str, Callable[[Any], Optional[str]]], ...] = (
    (SystemView, "distribution", lambda s: text(s.distro.get("PRETTY_NAME"))),
    (SystemView, "container", lambda s: container(s.container)),
    (SystemView, "libcuda outside WSL", lambda s: text(" ".join(s.libcuda_outside_wsl) or None)),
    (TargetView, "Python version", lambda s: text(s.python.get("version"))),
    (TargetView, "Python implementation", lambda s: text(s.python.get("implementation"))),
    (TargetView, "free-threaded Python", lambda s: text(s.python.get("gil_disabled"))),
    (TargetView, "conda environment", lambda s: text(s.python.get("conda_prefix"))),
    (TargetView, "torch git version", lambda s: text(s.torch_facts.get("git_version"))),
    (CpuView, "CPU model", lambda s: text(s.model)),
    (CpuView, "usable CPUs", lambda s: text(s.usable_cpus)),
    (CpuView, "logical cores", lambda s: text(s.logical_cores)),
    (MemoryView, "RAM", lambda s: gib(s.ram_total_bytes, None)),
    (MemoryView, "swap", lambda s: gib(s.swap_total_bytes, None)),
    (MemoryView, "/dev/shm", lambda s: gib(s.shm_total_bytes, None)),
    (GpuView, "GPU facts source", lambda s: text(s.source)),
    (GpuView, "GPU memory", lambda s: " ".join(filter(None, (gib(g.get("memory_total_bytes"), None) for g in s.recorded_gpus))) or None),
)


def recorded(facts: Facts, kind: type) -> Any:
    """The view, or None where the report does not record it (or records it in another shape)."""
    found = read(facts, kind)
    return None if isinstance(found, Unrecorded) else found


def changes(group: str, a: Mapping[str, Optional[str]], b: Mapping[str, Optional[str]]) -> Iterable[Change]:
    """The entries that differ, in A's order, then those only B has."""
    for name in [*a, *(n for n in b if n not in a)]:
        if a.get(name) != b.get(name):
            yield Change(group, name, a.get(name), b.get(name))


def packages(facts: Facts) -> Mapping[str, str]:
    """Every package's version (a target of another shape lists nothing)."""
    target = read(facts, TargetView)
    found = {} if isinstance(target, Unrecorded) else distribution_versions(target)
    return {name: found[name] for name in sorted(found) if name not in PACKAGES_READ}


def conda_packages(facts: Facts) -> Mapping[str, str]:
    """What conda installed, name -> "version (channel::build)", listed as pip's packages are."""
    conda = read(facts, CondaView)
    found = {} if isinstance(conda, Unrecorded) else conda.records
    return {name: f"{r.get('version')} ({r.get('channel') or '?'}::{r.get('build') or '?'})" for name, r in sorted(found.items())}


def variables(facts: Facts) -> Mapping[str, str]:
    environ = read(facts, EnvironView)
    found = {} if isinstance(environ, Unrecorded) else environ.variables
    return {n: v for n, v in found.items() if n not in VARIABLES_READ}


def host_facts(facts: Facts, kinds: Iterable[type]) -> Mapping[str, Optional[str]]:
    """Host facts of the views both reports record (a missing section, or one of an unexpected shape,
    is not a difference)."""
    return {label: read_fact(recorded(facts, kind)) for kind, label, read_fact in HOST_FACTS if kind in kinds}


def other_differences(facts_a: Facts, facts_b: Facts) -> List[Change]:
    both = [kind for kind in {k for k, _, _ in HOST_FACTS} if recorded(facts_a, kind) and recorded(facts_b, kind)]
    found = list(changes("host fact", host_facts(facts_a, both), host_facts(facts_b, both)))
    if recorded(facts_a, TargetView) and recorded(facts_b, TargetView):
        found += changes("package", packages(facts_a), packages(facts_b))
        found += changes("conda package", conda_packages(facts_a), conda_packages(facts_b))
    if recorded(facts_a, EnvironView) and recorded(facts_b, EnvironView):
        found += changes("variable", variables(facts_a), variables(facts_b))
    return found
