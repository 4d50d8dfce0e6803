"""Conda environment checks, over the conda view of the target (facts/conda.py: which records conda
installed, which pip distributions conda owns), with exact conda commands as remedies.

Facts: target["conda"] from target/conda.py (the conda-meta records, activation, the managing
executable) and its `cxx_runtime` read from the ELF files (collect/elf.py).

Which libstdc++.so.6 a process loads (the rule `cxx_runtime.loaded` records): LD_PRELOAD first, then
the LD_LIBRARY_PATH folders, then, in a conda environment that ships lib/libstdc++.so.6, the env's
copy: conda's python and every library conda installed carry an RPATH to the env's lib/
(conda-build's relative `$ORIGIN/../lib`), and once one of them loaded it the dynamic loader hands
that same copy to every later request for the soname (ld.so(8): a loaded soname is not searched
again); otherwise the system's, found through ld.so.cache. Symbol-version labels are cumulative
(libstdc++ manual, "ABI Policy and Guidelines"), so the highest version a library defines says all it
provides.
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple

from envdoctor.checks import check
from envdoctor.checks.wheels import pinned
from envdoctor.facts import view_of
from envdoctor.facts.conda import CondaView, listing, mapping, shown
from envdoctor.facts.probe import openmp_runtimes
from envdoctor.facts.target import TargetView, normalize
from envdoctor.knowledge import minor_of
from envdoctor.knowledge.conda import gcc_providing
from envdoctor.model import Finding, Remedy, Severity

OPENMP_RUNTIMES = ("libgomp", "libiomp5", "libomp")
CRASHING_OPENMP_PAIR = {"libomp", "libiomp5"}
BLAS_RECORDS = re.compile(r"^(mkl|openblas|libopenblas|nomkl)$")
LIBSTDCXX = "libstdcxx-ng"
CXX_LABELS = ("glibcxx", "cxxabi")
SHOWN = 8
MULTIPLE_OPENMP = "https://github.com/joblib/threadpoolctl/blob/master/multiple_openmp.md"


def conda_of(facts: Mapping[str, Any]) -> CondaView:
    return view_of(facts, CondaView)


def conda_command(facts: Mapping[str, Any], verb: str, args: Sequence[str]) -> str:
    """`conda VERB -p PREFIX ARGS` with the executable that manages the environment."""
    prefix = str(conda_of(facts).environment.get("prefix"))
    return " ".join(shlex.quote(a) for a in (conda_of(facts).manager, verb, "-p", prefix, *args))


# --- CUDA majors -----------------------------------------------------------------------------


def torch_cuda_major(facts: Mapping[str, Any]) -> Optional[str]:
    build = view_of(facts, TargetView).torch_build
    return build.cuda.split(".", 1)[0] if build and build.cuda else None


def removal_remedies(facts, conda_side: Mapping[str, list], pip_side: Mapping[str, list], keep: str) -> Tuple[Remedy, ...]:
    """Remove every CUDA package of a major other than `keep`, each with the installer that put it there."""
    conda_names = sorted({str(r.get("name")) for major, rs in conda_side.items() if major != keep for r in rs})
    pip_names = sorted({str(d.get("name")) for major, ds in pip_side.items() if major != keep for d in ds})
    remedies = []
    if conda_names:
        remedies.append(Remedy(f"Remove conda's CUDA {'/'.join(m for m in conda_side if m != keep)} packages (conda lists what depends on them before it asks):", conda_command(facts, "remove", conda_names)))
    if pip_names:
        remedies.append(Remedy(f"Uninstall pip's CUDA {'/'.join(m for m in pip_side if m != keep)} wheels:", view_of(facts, TargetView).installer_command("uninstall", pip_names)))
    return tuple(remedies)


def pin_cuda_remedy(facts: Mapping[str, Any]) -> Tuple[Remedy, ...]:
    """The whole stack rebuilt for the CUDA torch was built with; none without a CUDA torch to say which."""
    build = view_of(facts, TargetView).torch_build
    if build is None or not build.cuda:
        return ()
    python = shlex.quote(view_of(facts, TargetView).executable)
    return (Remedy(f"Or let envdoctor plan the stack for CUDA {minor_of(build.cuda)} alone (add --apply to carry it out):", f"envdoctor fix --pin-cuda {minor_of(build.cuda)} --python {python}"),)


@check("conda.mixed-cuda", "CUDA libraries of more than one CUDA major from conda and pip in one environment", requires=("target",))
def mixed_cuda(facts: Mapping[str, Any]) -> Iterable[Finding]:
    conda_side, pip_side = conda_of(facts).conda_cuda_majors(), conda_of(facts).pip_cuda_majors()
    majors = sorted(set(conda_side) | set(pip_side), key=int)
    if not conda_side or len(majors) < 2:
        return  # pip's wheels alone are wheels.mixed-cuda-families' to report
    needed = torch_cuda_major(facts)
    described = "; ".join(
        [f"conda CUDA {m}: {', '.join(shown(r) for r in conda_side[m])}" for m in conda_side]
        + [f"pip CUDA {m}: {', '.join(pinned(d) for d in pip_side[m])}" for m in pip_side]
    )
    keeps = [needed] if needed in majors else majors
    remedies = tuple(r for keep in keeps for r in removal_remedies(facts, conda_side, pip_side, keep))
    yield Finding(
        id="conda.mixed-cuda",
        severity=Severity.ERROR if needed else Severity.WARNING,
        title=f"CUDA {' and '.join(majors)} libraries are installed together, by {' and '.join(i for i, s in (('conda', conda_side), ('pip', pip_side)) if s)}",
        explanation=(
            f"{described}. "
            + (f"torch is a CUDA {needed} build. " if needed else "No CUDA build of torch says which major is needed. ")
            + "conda puts its CUDA libraries in the environment's lib/ and pip puts its own under site-packages/nvidia/; "
            "an extension of one major that loads the other's cuBLAS, cuDNN or NCCL ends in undefined symbols, "
            "'CUDA driver version is insufficient' or a segfault."
        ),
        evidence={
            "conda": {m: [shown(r) for r in rs] for m, rs in conda_side.items()},
            "pip": {m: [pinned(d) for d in ds] for m, ds in pip_side.items()},
            "torch_cuda": needed,
        },
        remedies=remedies + pin_cuda_remedy(facts),
        references=("https://github.com/pytorch/pytorch/issues/91067",),
    )


# --- Two torches -----------------------------------------------------------------------------


def torch_description(facts: Mapping[str, Any], dist: Mapping[str, Any]) -> str:
    return f"torch {dist.get('version')} by {conda_of(facts).installed_by(dist)} in {dist.get('location')}"


@check("conda.two-torches", "A conda pytorch and a pip torch in one environment", requires=("target",))
def two_torches(facts: Mapping[str, Any]) -> Iterable[Finding]:
    record = conda_of(facts).conda_torch
    pip_torches = [d for d in conda_of(facts).all_distributions if normalize(str(d.get("name"))) == "torch" and conda_of(facts).installed_by(d) == "pip"]
    if record is None or not pip_torches:
        return
    loaded = conda_of(facts).loaded_torch
    build = view_of(facts, TargetView).torch_facts
    files_say = f"torch/version.py there says {build.get('version')} (CUDA {build.get('cuda') or 'none'})" if build else "torch/version.py could not be read"
    loads = f"`import torch` loads {torch_description(facts, loaded)}: {files_say}." if loaded else "No torch distribution comes first on sys.path."
    pip_version = str(pip_torches[0].get("version"))
    channels = [a for c in (record.get("channel"),) if c for a in ("-c", str(c))]
    yield Finding(
        id="conda.two-torches",
        severity=Severity.ERROR,
        title=f"conda's {shown(record)} and pip's torch {pip_version} are both installed",
        explanation=(
            f"{loads} pip writes its torch over the files of conda's pytorch package (or beside them), while "
            "conda-meta still records pytorch: conda's next update or removal deletes files pip's torch needs, "
            "and conda's CUDA and MKL libraries meet a torch built against others."
        ),
        evidence={
            "conda_record": shown(record),
            "pip_torches": [torch_description(facts, d) for d in pip_torches],
            "loaded": torch_description(facts, loaded) if loaded else None,
            "torch_version_py": dict(build) or None,
        },
        remedies=(
            Remedy(
                "Keep conda's: uninstall pip's torch, then restore conda's files:",
                view_of(facts, TargetView).installer_command("uninstall", ["torch"]) + " && " + conda_command(facts, "install", ["--force-reinstall", f"pytorch=={record.get('version')}", *channels]),
            ),
            Remedy(
                "Or keep pip's: drop conda's package without touching its dependents, then reinstall pip's files:",
                conda_command(facts, "remove", ["--force", str(record.get("name"))]) + " && " + view_of(facts, TargetView).installer_command("install", ["--force-reinstall", f"torch=={pip_version}"]),
            ),
        ),
    )


# --- C++ runtime -----------------------------------------------------------------------------


def version_key(text: Any) -> Tuple[int, ...]:
    return tuple(int(p) for p in str(text).split(".") if p.isdigit()) if text else ()


def unmet(requirements: Iterable[Mapping[str, Any]], library: Mapping[str, Any]) -> List[Mapping[str, Any]]:
    """The extensions that need a GLIBCXX_ or CXXABI_ version above what `library` defines."""
    return [r for r in requirements if any(version_key(r.get(label)) > version_key(library.get(label)) for label in CXX_LABELS)]


def provides(library: Mapping[str, Any]) -> str:
    if not library:
        return "nothing (not found)"
    return f"GLIBCXX_{library.get('glibcxx')} and CXXABI_{library.get('cxxabi')}"


def cxx_remedies(facts, runtime: Mapping[str, Any], wanted: str) -> Tuple[Remedy, ...]:
    via = mapping(runtime.get("loaded")).get("via")
    gcc = gcc_providing(wanted)
    upgrade = Remedy(
        f"Give the environment a libstdc++ that provides GLIBCXX_{wanted}" + (f" (GCC {gcc} or newer):" if gcc else ":"),
        conda_command(facts, "install", ["-c", "conda-forge", f"{LIBSTDCXX}>={gcc}" if gcc else LIBSTDCXX]),  # 13.1 lacks 3.4.32: the minor counts
    )
    if via == "LD_PRELOAD":
        return (Remedy("LD_PRELOAD forces this libstdc++ into every process; drop it:", "unset LD_PRELOAD"), upgrade)
    if via == "LD_LIBRARY_PATH":
        folder = os.path.dirname(str(mapping(mapping(runtime.get("loaded")).get("library")).get("path")))
        return (Remedy(f"LD_LIBRARY_PATH puts {folder} before the environment's lib/; remove it from LD_LIBRARY_PATH.", f"echo \"$LD_LIBRARY_PATH\"  # then export it without {shlex.quote(folder)}"), upgrade)
    return (upgrade, Remedy("Or reinstall the extensions listed in the evidence from conda-forge, built for the environment's runtime."))


@check("conda.cxx-runtime", "Extensions that need a newer libstdc++ than the one the conda environment loads", requires=("target",))
def cxx_runtime(facts: Mapping[str, Any]) -> Iterable[Finding]:
    runtime = mapping(conda_of(facts).environment.get("cxx_runtime"))
    library = mapping(mapping(runtime.get("loaded")).get("library"))
    short = unmet(map(mapping, listing(runtime.get("requirements"))), library)
    if not runtime or not short:
        return
    wanted = {label: max((str(r.get(label)) for r in short if r.get(label)), key=version_key, default="") for label in CXX_LABELS}
    system, own = mapping(runtime.get("system_library")), mapping(runtime.get("env_library"))
    system_would = bool(system) and not unmet(short, system)
    yield Finding(
        id="conda.cxx-runtime",
        severity=Severity.ERROR,
        title=(
            f"{len(short)} extension(s) need GLIBCXX_{wanted['glibcxx']}, but the libstdc++ that loads "
            f"({library.get('path') or 'none found'}) provides up to GLIBCXX_{library.get('glibcxx')}"
        ),
        explanation=(
            f"Importing them fails with \"libstdc++.so.6: version `GLIBCXX_{wanted['glibcxx']}' not found\". "
            f"It is the one that loads by {mapping(runtime.get('loaded')).get('via')}: LD_PRELOAD, then LD_LIBRARY_PATH, then the "
            "environment's own lib/libstdc++.so.6 (conda's python and libraries reach it through their RPATH, and "
            "the first copy loaded serves every later request), then the system's. "
            f"The environment's copy provides {provides(own)}; the system's provides {provides(system)}"
            + (", which would satisfy them: the environment's older copy shadows it." if system_would and own else ".")
        ),
        evidence={
            "loaded": dict(mapping(runtime.get("loaded"))),
            "env_library": dict(own) or None,
            "system_library": dict(system) or None,
            "needing": [f"{r.get('path')}: GLIBCXX_{r.get('glibcxx')} CXXABI_{r.get('cxxabi')}" for r in short[:SHOWN]],
            "needing_count": len(short),
            "python_rpath": mapping(runtime.get("python")).get("rpath"),
        },
        remedies=cxx_remedies(facts, runtime, wanted["glibcxx"] or str(library.get("glibcxx"))),
        references=("https://gcc.gnu.org/onlinedocs/libstdc++/manual/abi.html", "https://man7.org/linux/man-pages/man8/ld.so.8.html"),
    )


# --- OpenMP ----------------------------------------------------------------------------------


def grouped_text(grouped: Mapping[str, List[str]]) -> str:
    return "; ".join(f"{key}: {', '.join(values[:SHOWN])}" for key, values in grouped.items())


def probed_openmp(facts: Mapping[str, Any]) -> List[str]:
    return [str(r.get("filepath")) for r in openmp_runtimes(facts)]


@check("conda.openmp-mixed", "conda's OpenMP runtime next to another that pip's wheels bundle", requires=("target",))
def openmp_mixed(facts: Mapping[str, Any]) -> Iterable[Finding]:
    conda_side, pip_side = conda_of(facts).conda_openmp(), conda_of(facts).pip_openmp()
    brought = sorted(set(pip_side) - set(conda_side))
    if not conda_side or not brought:
        return
    crashing = CRASHING_OPENMP_PAIR <= set(conda_side) | set(pip_side)
    mkl = "mkl" in conda_of(facts).records
    blas = [shown(r) for n, r in sorted(conda_of(facts).records.items()) if BLAS_RECORDS.match(n)]
    yield Finding(
        id="conda.openmp-mixed",
        severity=Severity.ERROR if crashing else Severity.WARNING,
        title=f"conda installs {', '.join(sorted(conda_side))} and pip's wheels bundle {', '.join(brought)}: two OpenMP runtimes in one process",
        explanation=(
            ("Intel OpenMP (libiomp5) and LLVM OpenMP (libomp) together cause random crashes and deadlocks. " if crashing else
             "Each runtime starts its own thread pool, so the threads oversubscribe the CPUs. ")
            + ("conda's MKL threads with Intel OpenMP by default; loaded after pip's libgomp it stops with "
               "\"MKL_THREADING_LAYER=INTEL is incompatible with libgomp.so.1\". " if mkl and "libgomp" in brought else "")
            + f"conda: {grouped_text(conda_side)}. pip: {grouped_text(pip_side)}."
        ),
        evidence={"conda": conda_side, "pip": pip_side, "conda_blas": blas, "probe_loaded": probed_openmp(facts) or None},
        remedies=(
            Remedy("Make MKL use GNU OpenMP, the runtime pip's torch bundles:", "export MKL_THREADING_LAYER=GNU"),
            Remedy("Or install the stack from one installer: conda's pytorch with conda's runtime, or pip's torch and numpy with conda's MKL removed:", conda_command(facts, "install", ["nomkl"])),
        ),
        references=(MULTIPLE_OPENMP,),
    )


# --- Activation ------------------------------------------------------------------------------


def activate_command(facts: Mapping[str, Any], conda: Mapping[str, Any]) -> str:
    kind = str(mapping(conda.get("manager")).get("kind") or "conda")
    return f"{kind} activate {shlex.quote(str(conda.get('prefix')))}"


@check("conda.env-not-active", "The diagnosed conda environment is not the active one", requires=("target",))
def env_not_active(facts: Mapping[str, Any]) -> Iterable[Finding]:
    conda = conda_of(facts).environment
    active = mapping(conda.get("active"))
    if not conda or active.get("this_env") or "this_env" not in active:
        return
    other = active.get("prefix")
    on_path = active.get("python_on_path")
    runs_other = not active.get("python_on_path_is_this")
    scripts = [str(s) for s in listing(conda.get("activation_scripts"))]
    yield Finding(
        id="conda.env-not-active",
        severity=Severity.WARNING if runs_other or scripts else Severity.INFO,
        title=(f"Another conda environment is active ({active.get('name') or other})" if other else "No conda environment is active")
        + f", not {conda.get('name') or conda.get('prefix')} whose python is diagnosed",
        explanation=(
            (f"`python` in this shell is {on_path or 'not found'}, not the diagnosed interpreter: what you run is not what was checked. " if runs_other else "")
            + "conda activate puts the environment's bin/ first on PATH and sets CONDA_PREFIX"
            + (f", and runs its activation scripts ({', '.join(scripts[:SHOWN])}), which set variables its packages need." if scripts else ".")
        ),
        evidence={"diagnosed": conda.get("prefix"), "active": other, "active_name": active.get("name"), "python_on_path": on_path, "activation_scripts": scripts},
        remedies=(
            Remedy("Activate it before running (your shell must have run `conda init`):", activate_command(facts, conda)),
            Remedy("Or run one command in it without activating:", f"{shlex.quote(conda_of(facts).manager)} run -p {shlex.quote(str(conda.get('prefix')))} python YOUR_SCRIPT.py"),
        ),
    )


@check("conda.active-env-not-diagnosed", "A conda environment is active but another interpreter is diagnosed", requires=("target",))
def active_env_not_diagnosed(facts: Mapping[str, Any]) -> Iterable[Finding]:
    found = conda_of(facts).found
    active = mapping(found.get("active"))
    if not found or found.get("prefix") or not active.get("prefix") or active.get("python_on_path_is_this", True):
        return
    active_python = os.path.join(str(active.get("prefix")), "bin", "python")
    yield Finding(
        id="conda.active-env-not-diagnosed",
        severity=Severity.WARNING,
        title=f"The conda environment {active.get('name') or active.get('prefix')} is active, but {view_of(facts, TargetView).executable} was diagnosed",
        explanation=(
            f"`python` in this shell is {active.get('python_on_path') or 'not found'}; the interpreter diagnosed is not in the active "
            "environment, so this report says nothing about the one your training runs in."
        ),
        evidence={"active": active.get("prefix"), "diagnosed": view_of(facts, TargetView).executable, "python_on_path": active.get("python_on_path")},
        remedies=(Remedy("Diagnose the active environment's python:", f"envdoctor check --python {shlex.quote(active_python)}"),),
    )
