"""Thread checks: pools larger than the CPUs, a masked duplicate OpenMP runtime, OpenBLAS's thread cap.

Facts: knowledge notes §7 (SB3 docs on OMP_NUM_THREADS; Intel OpenMP "Error #15" text;
OpenMathLib/OpenBLAS#539, #889 on the NUM_THREADS cap).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from envdoctor.checks import check
from envdoctor.checks.facts import distributions, usable_cpus, variables
from envdoctor.model import Finding, Remedy, Severity

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMEXPR_MAX_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "GOTO_NUM_THREADS",
    "BLIS_NUM_THREADS",
)
TRUTHY = ("1", "true", "yes", "on")
# OpenBLAS is compiled with a NUM_THREADS cap; common builds use 64 (and some 128 or 256).
OPENBLAS_COMMON_CAP = 64
MANY_CORES = 16
OPENBLAS_DISTRIBUTIONS = ("scipy-openblas64", "scipy-openblas32", "numpy", "scipy")


def thread_count(value: str) -> Optional[int]:
    """The outermost thread count of a variable ("8" or OpenMP's nested "8,2"), None if unreadable."""
    first = value.split(",")[0].strip()
    return int(first) if first.isdigit() else None


def export_lines(cpus: int) -> str:
    return " ".join(f"{name}={cpus}" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"))


@check("threads.oversubscribed", "Thread-pool variables above the CPUs this process may use", requires=("environ", "cpu"))
def oversubscribed(facts: Mapping[str, Any]) -> Iterable[Finding]:
    cpus = usable_cpus(facts)
    env = variables(facts)
    too_many = {n: env[n] for n in THREAD_VARIABLES if n in env and cpus and (thread_count(env[n]) or 0) > cpus}
    unreadable = {n: env[n] for n in THREAD_VARIABLES if n in env and thread_count(env[n]) is None}
    if too_many:
        yield Finding(
            id="threads.oversubscribed",
            severity=Severity.WARNING,
            title=f"Thread pools are set larger than the {cpus} CPUs this process may use",
            explanation=(
                "More threads than usable CPUs make OpenMP/BLAS threads spin against each other; with "
                "SubprocVecEnv every worker multiplies it. Runs slow down by orders of magnitude and "
                "OpenBLAS can exhaust its memory regions and crash."
            ),
            evidence={"variables": too_many, "usable_cpus": cpus},
            remedies=(Remedy("Limit the pools to the usable CPUs:", f"export {export_lines(cpus)}"),),
        )
    if unreadable:
        yield Finding(
            id="threads.oversubscribed",
            severity=Severity.WARNING,
            title="Thread-pool variables hold values the libraries ignore",
            explanation="A value that is not a positive integer is ignored, so the library starts one thread per core.",
            evidence={"variables": unreadable},
            remedies=(Remedy("Set a plain number, e.g.:", f"export {export_lines(cpus or 1)}"),),
        )


@check("threads.kmp-duplicate-lib-ok", "KMP_DUPLICATE_LIB_OK hides two OpenMP runtimes in one process", requires=("environ",))
def kmp_duplicate_lib_ok(facts: Mapping[str, Any]) -> Iterable[Finding]:
    value = variables(facts).get("KMP_DUPLICATE_LIB_OK")
    if value is None or value.strip().lower() not in TRUTHY:
        return
    yield Finding(
        id="threads.kmp-duplicate-lib-ok",
        severity=Severity.WARNING,
        title="KMP_DUPLICATE_LIB_OK is set: a second OpenMP runtime may be loaded and crash the process",
        explanation=(
            "Intel OpenMP stops with \"OMP: Error #15: Initializing libiomp5 ... already initialized\" when two "
            "copies are loaded; this variable silences that check, which Intel calls unsafe: it \"may cause "
            "crashes or silently produce incorrect results\". Segfaults in training are reported with it set."
        ),
        evidence={"KMP_DUPLICATE_LIB_OK": value},
        remedies=(
            Remedy("Unset it and let the probe show which libraries load two runtimes:", "unset KMP_DUPLICATE_LIB_OK && envdoctor check"),
            Remedy("With conda, keep one runtime, e.g.:", "conda install nomkl"),
        ),
        references=("https://github.com/joblib/threadpoolctl/blob/master/multiple_openmp.md",),
    )


@check("threads.openblas-limit", "More CPUs than OpenBLAS's compiled thread cap", requires=("environ", "cpu", "target"))
def openblas_limit(facts: Mapping[str, Any]) -> Iterable[Finding]:
    cpus = usable_cpus(facts) or 0
    if cpus <= OPENBLAS_COMMON_CAP or "OPENBLAS_NUM_THREADS" in variables(facts):
        return
    users = sorted(set(OPENBLAS_DISTRIBUTIONS) & set(distributions(facts)))
    if not users:
        return
    yield Finding(
        id="threads.openblas-limit",
        severity=Severity.WARNING,
        title=f"{cpus} CPUs exceed OpenBLAS's usual compiled cap of {OPENBLAS_COMMON_CAP} threads",
        explanation=(
            "OpenBLAS sizes its buffers for a compile-time NUM_THREADS. On more cores it ends with \"OpenBLAS : "
            "Program is Terminated. Because you tried to allocate too many memory regions\", often followed by "
            "a segfault."
        ),
        evidence={"usable_cpus": cpus, "openblas_users": users},
        remedies=(Remedy("Cap OpenBLAS's threads:", f"export OPENBLAS_NUM_THREADS={OPENBLAS_COMMON_CAP}"),),
        references=("https://github.com/OpenMathLib/OpenBLAS/issues/889",),
    )


@check("threads.unlimited", "No thread limit on a many-core machine", requires=("environ", "cpu"))
def unlimited(facts: Mapping[str, Any]) -> Iterable[Finding]:
    cpus = usable_cpus(facts) or 0
    env = variables(facts)
    if cpus < MANY_CORES or any(name in env for name in THREAD_VARIABLES):
        return
    yield Finding(
        id="threads.unlimited",
        severity=Severity.INFO,
        title=f"No thread variable is set: every process starts {cpus} OpenMP/BLAS threads",
        explanation=(
            "That suits one training process. With SubprocVecEnv or several runs on this machine, each process "
            "starts its own pools and they oversubscribe the CPUs; SB3 recommends one thread per worker."
        ),
        evidence={"usable_cpus": cpus},
        remedies=(Remedy("For vectorised environments or parallel runs:", "export OMP_NUM_THREADS=1"),),
        references=("https://stable-baselines3.readthedocs.io/en/master/guide/migration.html",),
    )
