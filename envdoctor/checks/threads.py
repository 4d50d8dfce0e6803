"""Thread checks: pools larger than the CPUs, two OpenMP runtimes in one process (or one masked), OpenBLAS's thread cap.

When the probe reached its thread-pool stage, what it measured in the running process decides how bad
an oversubscribing variable is (torch, OpenMP and MKL clamp to the usable CPUs; other libraries may not).
Facts: docs/knowledge/domain-facts.md §7 (SB3 docs on OMP_NUM_THREADS; Intel OpenMP "Error #15" text;
OpenMathLib/OpenBLAS#539, #889 on the NUM_THREADS cap; threadpoolctl's multiple_openmp.md: libomp + libiomp
is the crashing pair).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, Mapping, Tuple

from envdoctor.checks import check
from envdoctor.facts import view_of
from envdoctor.facts.cpu import CpuView
from envdoctor.facts.environ import EnvironView, THREAD_VARIABLES, thread_count
from envdoctor.facts.probe import openmp_runtimes, probe_of
from envdoctor.facts.target import TargetView
from envdoctor.model import Finding, Remedy, Severity
from envdoctor.probe.result import StageStatus

TRUTHY = ("1", "true", "yes", "on")
# OpenBLAS is compiled with a NUM_THREADS cap; common builds use 64 (and some 128 or 256).
OPENBLAS_COMMON_CAP = 64
MANY_CORES = 16
OPENBLAS_DISTRIBUTIONS = ("scipy-openblas64", "scipy-openblas32", "numpy", "scipy")
# The lines of torch.__config__.parallel_info() that give the OpenMP and MKL pools' sizes.
PARALLEL_INFO_COUNTS = {"openmp": re.compile(r"omp_get_max_threads\(\) : (\d+)"), "mkl": re.compile(r"mkl_get_max_threads\(\) : (\d+)")}


def export_lines(cpus: int) -> str:
    return " ".join(f"{name}={cpus}" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"))


def measured_threads(facts: Mapping[str, Any]) -> Dict[str, int]:
    """The thread counts the probe's thread-pool stage saw in the running process: torch's own, OpenMP's
    and MKL's (from torch's parallel_info) and each library threadpoolctl found; {} without that stage."""
    probe = probe_of(facts)
    stage = probe.stage("thread_pools") if probe else None
    if stage is None or stage.status is not StageStatus.PASSED:
        return {}
    details = stage.details if isinstance(stage.details, Mapping) else {}
    measured = {"torch": details.get("torch_num_threads")}
    info = str(details.get("parallel_info") or "")
    for name, pattern in PARALLEL_INFO_COUNTS.items():
        match = pattern.search(info)
        measured[name] = int(match.group(1)) if match else None
    libraries = details.get("libraries")
    for library in libraries if isinstance(libraries, list) else ():
        if isinstance(library, Mapping):
            measured.setdefault(str(library.get("prefix") or library.get("internal_api")), library.get("num_threads"))
    return {name: count for name, count in measured.items() if isinstance(count, int)}


def measured_text(measured: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in measured.items())


def oversubscription_verdict(measured: Mapping[str, int], cpus: int) -> Tuple[Severity, str]:
    """What the probe saw decides: pools it measured within the CPUs are clamped, not oversubscribed."""
    if not measured:
        return Severity.WARNING, (
            "Whether the libraries clamp it to the usable CPUs was not measured (the probe did not reach its thread-pool "
            "stage). A library that takes the value as given starts that many threads; more threads than CPUs spin "
            "against each other, every SubprocVecEnv worker multiplies it, and OpenBLAS can exhaust its memory regions and crash."
        )
    largest = max(measured.values())
    if largest <= cpus:
        return Severity.INFO, (
            f"The probe measured the pools in the running process at {measured_text(measured)} threads: these libraries "
            f"clamp it to the {cpus} usable CPUs, so the probed stack is not oversubscribed. A program that takes the "
            "value as given (numexpr, another OpenBLAS build, a job launcher) would start that many threads; setting the "
            "usable CPUs says what is meant."
        )
    return Severity.WARNING, (
        f"The probe measured {measured_text(measured)} threads in the running process, on {cpus} usable CPUs: the threads "
        "spin against each other and every SubprocVecEnv worker multiplies it."
    )


@check("threads.oversubscribed", "Thread-pool variables above the CPUs this process may use", requires=("environ", "cpu"))
def oversubscribed(facts: Mapping[str, Any]) -> Iterable[Finding]:
    cpus = view_of(facts, CpuView).usable_cpus
    env = view_of(facts, EnvironView).variables
    too_many = {n: env[n] for n in THREAD_VARIABLES if n in env and cpus and (thread_count(env[n]) or 0) > cpus}
    invalid = {n: env[n] for n in THREAD_VARIABLES if n in env and not thread_count(env[n])}
    if too_many:
        measured = measured_threads(facts)
        severity, explanation = oversubscription_verdict(measured, cpus)
        settings = " ".join(f"{name}={value}" for name, value in too_many.items())
        yield Finding(
            id="threads.oversubscribed",
            severity=severity,
            title=f"{settings} {'is' if len(too_many) == 1 else 'are'} set above the {cpus} CPUs this process may use",
            explanation=explanation,
            evidence={"variables": too_many, "usable_cpus": cpus, "measured_threads": measured or None},
            remedies=(Remedy("Limit the pools to the usable CPUs:", f"export {export_lines(cpus)}"),),
        )
    if invalid:
        yield invalid_values(facts, invalid, cpus)


def invalid_values(facts: Mapping[str, Any], invalid: Mapping[str, str], cpus: int) -> Finding:
    """0 or a word where a thread count belongs: the libraries ignore it (libgomp says so on stderr) and
    fall back to their own default; what that default came to is the probe's measurement, not a guess."""
    probe = probe_of(facts)
    said = [m for m in (probe.library_messages if probe else ()) if any(name in m for name in invalid)]
    measured = measured_threads(facts)
    settings = " ".join(f"{name}={value or chr(34) * 2}" for name, value in invalid.items())
    measurement = (
        f"The probe measured {measured_text(measured)} threads in the running process."
        if measured else "Which default the libraries took was not measured (the probe did not reach its thread-pool stage)."
    )
    return Finding(
        id="threads.oversubscribed",
        severity=Severity.WARNING,
        title=f"{settings}: not a positive thread count, so the libraries ignore it",
        explanation=(
            "OpenMP and the BLAS libraries take only a positive integer; they ignore 0 or text and fall back to their own "
            "default, so the limit meant here is not applied"
            + (f" (the library said: {'; '.join(said)})" if said else "") + ". " + measurement
        ),
        evidence={"variables": dict(invalid), "library_messages": said, "measured_threads": measured or None, "usable_cpus": cpus},
        remedies=(Remedy("Set a positive number, e.g. one thread per worker process or the usable CPUs:", f"export {export_lines(cpus or 1)}"),),
    )


@check("threads.kmp-duplicate-lib-ok", "KMP_DUPLICATE_LIB_OK hides two OpenMP runtimes in one process", requires=("environ",))
def kmp_duplicate_lib_ok(facts: Mapping[str, Any]) -> Iterable[Finding]:
    value = view_of(facts, EnvironView).variables.get("KMP_DUPLICATE_LIB_OK")
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
    cpus = view_of(facts, CpuView).usable_cpus or 0
    if cpus <= OPENBLAS_COMMON_CAP or "OPENBLAS_NUM_THREADS" in view_of(facts, EnvironView).variables:
        return
    users = sorted(set(OPENBLAS_DISTRIBUTIONS) & set(view_of(facts, TargetView).distributions))
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
    cpus = view_of(facts, CpuView).usable_cpus or 0
    env = view_of(facts, EnvironView).variables
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


@check("threads.multiple-openmp", "Two OpenMP runtimes loaded in one process", requires=("probe",))
def multiple_openmp(facts: Mapping[str, Any]) -> Iterable[Finding]:
    runtimes = openmp_runtimes(facts)
    if len({r.get("filepath") for r in runtimes}) < 2:
        return
    prefixes = {r.get("prefix") for r in runtimes}
    crashing_pair = {"libomp", "libiomp"} <= prefixes
    yield Finding(
        id="threads.multiple-openmp",
        severity=Severity.ERROR if crashing_pair else Severity.WARNING,
        title=f"{len(runtimes)} OpenMP runtimes are loaded in one process: {', '.join(sorted(p or '?' for p in prefixes))}",
        explanation=(
            "Intel OpenMP (libiomp) and LLVM OpenMP (libomp) together cause random crashes and deadlocks on Linux."
            if crashing_pair
            else "Two OpenMP runtimes each start their own thread pool; GNU and Intel OpenMP usually coexist, but threads oversubscribe."
        ),
        evidence={"runtimes": [r.get("filepath") for r in runtimes]},
        remedies=(
            Remedy("Make MKL use GNU OpenMP:", "export MKL_THREADING_LAYER=GNU"),
            Remedy("Or keep one runtime: install numpy/scipy from PyPI or conda-forge (OpenBLAS) instead of MKL builds."),
        ),
        references=("https://github.com/joblib/threadpoolctl/blob/master/multiple_openmp.md",),
    )
