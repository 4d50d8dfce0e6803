"""`fix --threads`: the thread-pool variables to export for the CPUs this process may really use.

Nothing is changed on disk: variables belong to the user's shell, so the plan is a list of `export`
lines (`eval "$(envdoctor fix --threads --format sh)"` applies them to the current shell).
"""

from __future__ import annotations

from typing import Any, Mapping

from envdoctor.facts import view_of
from envdoctor.facts.cpu import CpuView
from envdoctor.facts.environ import THREAD_VARIABLES, EnvironView, thread_count
from envdoctor.fix import FixError
from envdoctor.fix.plan import Plan, Step, StepKind, StepStatus

CORE_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def export_step(name: str, current: str, cpus: int) -> Step:
    summary = f"Set {name}={cpus}"
    if current == str(cpus):
        return Step(StepKind.EXPORT, summary, f"already {cpus}", StepStatus.SKIPPED)
    now = f"now {current!r}" if current else "now unset: the library starts one thread per core it sees"
    return Step(StepKind.EXPORT, summary, f"{cpus} usable CPUs ({now})", argv=("export", f"{name}={cpus}"))


def plan_threads(facts: Mapping[str, Any], python: str) -> Plan:
    """The plan for `fix --threads`; pure: facts in, plan out."""
    cpus = view_of(facts, CpuView).usable_cpus
    if not cpus:
        raise FixError("could not tell how many CPUs this process may use (no cpu facts)")
    env = view_of(facts, EnvironView).variables
    too_many = [n for n in THREAD_VARIABLES if n not in CORE_VARIABLES and n in env and (thread_count(env[n]) or cpus + 1) > cpus]
    steps = tuple(export_step(name, env.get(name, ""), cpus) for name in (*CORE_VARIABLES, *too_many))
    return Plan(
        action="threads",
        title=f"Limit the OpenMP/BLAS thread pools to the {cpus} usable CPUs",
        python=python,
        installer="shell",
        steps=steps,
        notes=(
            "These are shell variables: export them, or run `eval \"$(envdoctor fix --threads --format sh)\"`.",
            "With SubprocVecEnv workers or several runs at once, use 1 per process instead (OMP_NUM_THREADS=1).",
        ),
    )
