"""Conda environment checks, and the conda view of the packages that the fix planner shares: which
records conda installed, which pip distributions conda owns, and exact conda commands.

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
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from envdoctor.checks import check
from envdoctor.checks.facts import normalize
from envdoctor.checks.wheels import families, installer_command, pinned, target_python, torch_build
from envdoctor.knowledge.conda import gcc_providing
from envdoctor.model import Finding, Remedy, Severity

CUDA_VERSIONED = re.compile(r"^(cudatoolkit|pytorch-cuda|cuda-.+)$")
BUILD_CUDA = re.compile(r"(?:^|[_.-])cuda_?(\d+)(?:\.\d+)?")
CUDA_VERSION_DEPENDENCY = re.compile(r"^cuda-version\s*[<>=!~ ]*\s*(\d+)")
CONDA_TORCH = ("pytorch", "pytorch-gpu", "pytorch-cpu")
OPENMP_RUNTIMES = ("libgomp", "libiomp5", "libomp")
CRASHING_OPENMP_PAIR = {"libomp", "libiomp5"}
BLAS_RECORDS = re.compile(r"^(mkl|openblas|libopenblas|nomkl)$")
RUNTIME_NAME = re.compile(r"^(libgomp|libiomp5|libomp)[-.]")
LIBSTDCXX = "libstdcxx-ng"
CXX_LABELS = ("glibcxx", "cxxabi")
SHOWN = 8
MULTIPLE_OPENMP = "https://github.com/joblib/threadpoolctl/blob/master/multiple_openmp.md"


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def listing(value: Any) -> list:
    return value if isinstance(value, list) else []


def conda_facts(facts: Mapping[str, Any]) -> Mapping[str, Any]:
    """target["conda"], or {} when it is missing or failed."""
    found = mapping(mapping(facts.get("target")).get("conda"))
    return {} if "error" in found else found


def environment(facts: Mapping[str, Any]) -> Mapping[str, Any]:
    """The conda facts when the diagnosed interpreter is a conda environment, else {}."""
    found = conda_facts(facts)
    return found if found.get("prefix") else {}


def records(facts: Mapping[str, Any]) -> Dict[str, Mapping[str, Any]]:
    """The environment's conda records by package name."""
    return {str(r.get("name")): r for r in map(mapping, listing(environment(facts).get("records"))) if r.get("name")}


def shown(record: Mapping[str, Any]) -> str:
    return f"{record.get('name')} {record.get('version')} ({record.get('channel') or '?'}::{record.get('build') or '?'})"


def manager(facts: Mapping[str, Any]) -> str:
    return str(mapping(environment(facts).get("manager")).get("path") or "conda")


def conda_command(facts: Mapping[str, Any], verb: str, args: Sequence[str]) -> str:
    """`conda VERB -p PREFIX ARGS` with the executable that manages the environment."""
    prefix = str(environment(facts).get("prefix"))
    return " ".join(shlex.quote(a) for a in (manager(facts), verb, "-p", prefix, *args))


def dist_info_identity(prefix: str, entry: str) -> Optional[Tuple[str, str, str]]:
    """(location, normalized name, version) of a dist-info/egg-info folder a conda record lists."""
    path = os.path.join(prefix, entry)
    stem = os.path.basename(path).rsplit(".", 1)[0]
    name, _, rest = stem.partition("-")
    return (os.path.dirname(path), normalize(name), rest.split("-", 1)[0]) if name and rest else None


def conda_owned(facts: Mapping[str, Any]) -> Set[Tuple[str, str, str]]:
    """The Python distributions conda installed, as (location, name, version)."""
    prefix = str(environment(facts).get("prefix") or "")
    owned = set()
    for record in records(facts).values():
        for entry in listing(record.get("python_dists")):
            identity = dist_info_identity(prefix, str(entry))
            if identity:
                owned.add(identity)
    return owned


def installed_by(facts: Mapping[str, Any], dist: Mapping[str, Any]) -> str:
    """ "conda" when a conda record put this distribution there, else "pip" (pip, uv or setup.py)."""
    identity = (str(dist.get("location")), normalize(str(dist.get("name"))), str(dist.get("version")))
    return "conda" if identity in conda_owned(facts) else "pip"


def all_distributions(facts: Mapping[str, Any]) -> List[Mapping[str, Any]]:
    target = mapping(facts.get("target"))
    return [mapping(d) for d in listing(target.get("distributions")) + listing(target.get("shadowed_distributions"))]


def conda_torch(facts: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    found = records(facts)
    return next((found[name] for name in CONDA_TORCH if name in found), None)


def loaded_torch(facts: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    """The torch distribution `import torch` finds: the first on sys.path, as the target scan records it."""
    return next((mapping(d) for d in listing(mapping(facts.get("target")).get("distributions")) if normalize(str(mapping(d).get("name"))) == "torch"), None)


def torch_installer(facts: Mapping[str, Any]) -> Optional[str]:
    """Who installed the torch that loads: "conda", "pip", or None without torch."""
    torch = loaded_torch(facts)
    return installed_by(facts, torch) if torch else None


# --- CUDA majors -----------------------------------------------------------------------------


def record_cuda_major(record: Mapping[str, Any]) -> Optional[str]:
    """The CUDA major a conda package belongs to: its version for the CUDA packages themselves, its
    cuda-version dependency, or the cudaXY of its build string (pytorch, cudnn, nccl)."""
    name, version = str(record.get("name")), str(record.get("version"))
    if CUDA_VERSIONED.match(name) and version.split(".", 1)[0].isdigit():
        return version.split(".", 1)[0]
    for dependency in listing(record.get("depends")):
        match = CUDA_VERSION_DEPENDENCY.match(str(dependency))
        if match:
            return match.group(1)
    match = BUILD_CUDA.search(str(record.get("build")))
    if match:
        digits = match.group(1)
        return digits[:-1] if len(digits) >= 3 else digits
    return None


def conda_cuda_majors(facts: Mapping[str, Any]) -> Dict[str, List[Mapping[str, Any]]]:
    grouped: Dict[str, List[Mapping[str, Any]]] = {}
    for name, record in sorted(records(facts).items()):
        major = record_cuda_major(record)
        if major:
            grouped.setdefault(major, []).append(record)
    return grouped


def pip_cuda_majors(facts: Mapping[str, Any]) -> Dict[str, List[Mapping[str, Any]]]:
    """pip's NVIDIA wheels by CUDA major ("cu12" -> "12"), those conda put there left out."""
    grouped: Dict[str, List[Mapping[str, Any]]] = {}
    for family, dists in families(facts).items():
        pip_only = [d for d in dists if installed_by(facts, d) == "pip"]
        if pip_only:
            grouped.setdefault(family[2:], []).extend(pip_only)
    return grouped


def torch_cuda_major(facts: Mapping[str, Any]) -> Optional[str]:
    build = torch_build(facts)
    return build.cuda.split(".", 1)[0] if build and build.cuda else None


def removal_remedies(facts, conda_side: Mapping[str, list], pip_side: Mapping[str, list], keep: str) -> Tuple[Remedy, ...]:
    """Remove every CUDA package of a major other than `keep`, each with the installer that put it there."""
    conda_names = sorted({str(r.get("name")) for major, rs in conda_side.items() if major != keep for r in rs})
    pip_names = sorted({str(d.get("name")) for major, ds in pip_side.items() if major != keep for d in ds})
    remedies = []
    if conda_names:
        remedies.append(Remedy(f"Remove conda's CUDA {'/'.join(m for m in conda_side if m != keep)} packages (conda lists what depends on them before it asks):", conda_command(facts, "remove", conda_names)))
    if pip_names:
        remedies.append(Remedy(f"Uninstall pip's CUDA {'/'.join(m for m in pip_side if m != keep)} wheels:", installer_command(facts, "uninstall", pip_names)))
    return tuple(remedies)


@check("conda.mixed-cuda", "CUDA libraries of more than one CUDA major from conda and pip in one environment", requires=("target",))
def mixed_cuda(facts: Mapping[str, Any]) -> Iterable[Finding]:
    conda_side, pip_side = conda_cuda_majors(facts), pip_cuda_majors(facts)
    majors = sorted(set(conda_side) | set(pip_side), key=int)
    if len(majors) < 2:
        return
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
        remedies=remedies + (Remedy(f"Or rebuild the stack for one CUDA: envdoctor fix --pin-cuda X.Y --python {shlex.quote(target_python(facts))}"),),
        references=("https://github.com/pytorch/pytorch/issues/91067",),
    )


# --- Two torches -----------------------------------------------------------------------------


def torch_description(facts: Mapping[str, Any], dist: Mapping[str, Any]) -> str:
    return f"torch {dist.get('version')} by {installed_by(facts, dist)} in {dist.get('location')}"


@check("conda.two-torches", "A conda pytorch and a pip torch in one environment", requires=("target",))
def two_torches(facts: Mapping[str, Any]) -> Iterable[Finding]:
    record = conda_torch(facts)
    pip_torches = [d for d in all_distributions(facts) if normalize(str(d.get("name"))) == "torch" and installed_by(facts, d) == "pip"]
    if record is None or not pip_torches:
        return
    loaded = loaded_torch(facts)
    build = mapping(mapping(facts.get("target")).get("torch_build"))
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
                installer_command(facts, "uninstall", ["torch"]) + " && " + conda_command(facts, "install", ["--force-reinstall", f"pytorch=={record.get('version')}", *channels]),
            ),
            Remedy(
                "Or keep pip's: drop conda's package without touching its dependents, then reinstall pip's files:",
                conda_command(facts, "remove", ["--force", str(record.get("name"))]) + " && " + installer_command(facts, "install", ["--force-reinstall", f"torch=={pip_version}"]),
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
        conda_command(facts, "install", ["-c", "conda-forge", f"{LIBSTDCXX}>={gcc.split('.')[0]}" if gcc else LIBSTDCXX]),
    )
    if via == "LD_PRELOAD":
        return (Remedy("LD_PRELOAD forces this libstdc++ into every process; drop it:", "unset LD_PRELOAD"), upgrade)
    if via == "LD_LIBRARY_PATH":
        folder = os.path.dirname(str(mapping(mapping(runtime.get("loaded")).get("library")).get("path")))
        return (Remedy(f"LD_LIBRARY_PATH puts {folder} before the environment's lib/; remove it from LD_LIBRARY_PATH.", f"echo \"$LD_LIBRARY_PATH\"  # then export it without {shlex.quote(folder)}"), upgrade)
    return (upgrade, Remedy("Or reinstall the extensions listed in the evidence from conda-forge, built for the environment's runtime."))


@check("conda.cxx-runtime", "Extensions that need a newer libstdc++ than the one the conda environment loads", requires=("target",))
def cxx_runtime(facts: Mapping[str, Any]) -> Iterable[Finding]:
    runtime = mapping(environment(facts).get("cxx_runtime"))
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


def runtime_of(library: str) -> Optional[str]:
    match = RUNTIME_NAME.match(library)
    return match.group(1) if match else None


def conda_openmp(facts: Mapping[str, Any]) -> Dict[str, List[str]]:
    """OpenMP runtime -> the conda packages that install it (read from the records' library lists)."""
    found: Dict[str, List[str]] = {}
    for name, record in sorted(records(facts).items()):
        for runtime in {runtime_of(str(lib)) for lib in listing(record.get("libraries"))} - {None}:
            found.setdefault(runtime, []).append(shown(record))
    return found


def pip_openmp(facts: Mapping[str, Any]) -> Dict[str, List[str]]:
    """OpenMP runtime -> the libraries pip wheels bundle (torch/lib/libgomp-*.so.1, scikit_learn.libs/...)."""
    found: Dict[str, List[str]] = {}
    for folder in map(mapping, listing(environment(facts).get("bundled_runtimes"))):
        for library in listing(folder.get("libraries")):
            runtime = runtime_of(str(library))
            if runtime:
                found.setdefault(runtime, []).append(os.path.join(str(folder.get("folder")), str(library)))
    return found


def grouped_text(grouped: Mapping[str, List[str]]) -> str:
    return "; ".join(f"{key}: {', '.join(values[:SHOWN])}" for key, values in grouped.items())


def probed_openmp(facts: Mapping[str, Any]) -> List[str]:
    stages = listing(mapping(facts.get("probe")).get("stages"))
    pools = next((mapping(s) for s in map(mapping, stages) if s.get("name") == "thread_pools"), {})
    return [str(mapping(r).get("filepath")) for r in listing(mapping(pools.get("details")).get("openmp_runtimes"))]


@check("conda.openmp-mixed", "conda's OpenMP runtime next to another that pip's wheels bundle", requires=("target",))
def openmp_mixed(facts: Mapping[str, Any]) -> Iterable[Finding]:
    conda_side, pip_side = conda_openmp(facts), pip_openmp(facts)
    brought = sorted(set(pip_side) - set(conda_side))
    if not conda_side or not brought:
        return
    crashing = CRASHING_OPENMP_PAIR <= set(conda_side) | set(pip_side)
    mkl = "mkl" in records(facts)
    blas = [shown(r) for n, r in sorted(records(facts).items()) if BLAS_RECORDS.match(n)]
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
    conda = environment(facts)
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
            Remedy("Or run one command in it without activating:", f"{shlex.quote(manager(facts))} run -p {shlex.quote(str(conda.get('prefix')))} python YOUR_SCRIPT.py"),
        ),
    )


@check("conda.active-env-not-diagnosed", "A conda environment is active but another interpreter is diagnosed", requires=("target",))
def active_env_not_diagnosed(facts: Mapping[str, Any]) -> Iterable[Finding]:
    found = conda_facts(facts)
    active = mapping(found.get("active"))
    if not found or found.get("prefix") or not active.get("prefix") or active.get("python_on_path_is_this", True):
        return
    active_python = os.path.join(str(active.get("prefix")), "bin", "python")
    yield Finding(
        id="conda.active-env-not-diagnosed",
        severity=Severity.WARNING,
        title=f"The conda environment {active.get('name') or active.get('prefix')} is active, but {target_python(facts)} was diagnosed",
        explanation=(
            f"`python` in this shell is {active.get('python_on_path') or 'not found'}; the interpreter diagnosed is not in the active "
            "environment, so this report says nothing about the one your training runs in."
        ),
        evidence={"active": active.get("prefix"), "diagnosed": target_python(facts), "python_on_path": active.get("python_on_path")},
        remedies=(Remedy("Diagnose the active environment's python:", f"envdoctor check --python {shlex.quote(active_python)}"),),
    )
