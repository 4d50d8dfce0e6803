"""Judging what really imports (`check --imports`): each failed top-level import classified by its
error, and each module that a file elsewhere on sys.path shadows.

Pure: everything comes from facts["imports"] (collect/imports.py), so `check --from` re-judges a
recorded run with newer rules. A failure is classified from its exception and what the import printed
by the classifier that `run` and the probe share (envdoctor/failures.py). Library and module names
map to what provides them through knowledge/nvidia_wheels.csv and knowledge/import_names.csv.
"""

from __future__ import annotations

import os
from dataclasses import replace
import re
import shlex
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from envdoctor.checks import check
from envdoctor.facts import view_of
from envdoctor.facts.environ import EnvironView
from envdoctor.facts.requirements import parsed_requirements
from envdoctor.facts.system import SystemView
from envdoctor.facts.target import TargetView, normalize
from envdoctor.failures import Failure, classify_message, first_line
from envdoctor.knowledge import rows, wheels
from envdoctor.knowledge.errors import by_kind
from envdoctor.model import Finding, Remedy, Severity

STACK = ("torch", "numpy", "stable-baselines3", "sb3-contrib", "gymnasium")
EXTRA = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")
SONAME = re.compile(r"^(lib[\w+-]+)\.so\.(\d+)")
BINARY_KINDS = ("numpy-abi", "glibc", "libstdcxx", "undefined-symbol", "crashed", "killed-parent")
# The dynamic loader's own kinds, each with remedies of its own below.
LOADER_KINDS = ("missing-library", "undefined-symbol", "glibc", "libstdcxx")


def error_line(result: Mapping[str, Any]) -> str:
    error = result.get("error") or {}
    if error:
        return f"{error.get('type')}: {first_line(error.get('message', ''))}"
    return first_line(result.get("output", "").split("Fatal Python error: ", 1)[-1]) or result.get("status", "")


def classify(result: Mapping[str, Any]) -> Failure:
    """What kind of failure an import result is, from how its child ended and what the error says."""
    status, line = result.get("status"), error_line(result)
    if status == "crashed":
        return Failure("crashed", f"killed the interpreter ({result.get('signal')})", result.get("signal") or "", line)
    if status == "killed-parent":
        return Failure("killed-parent", f"killed the process that started it ({result.get('signal')})", result.get("signal") or "", line)
    if status == "timed_out":
        return Failure("timed-out", "did not finish within its time limit", "", line)
    if status == "exited":
        return Failure("exited", f"ended the interpreter (exit code {result.get('returncode')})", "", line)
    error = result.get("error") or {}
    message = f"{error.get('type')}: {error.get('message', '')}"
    return as_loader_failure(classify_message(message, f"{message}\n{result.get('output', '')}", line), message)


def as_loader_failure(failure: Failure, message: str) -> Failure:
    """A failure the error table names more precisely than the loader does (a CUDA library, a system
    graphics library, a torch extension's symbol) is still the loader's kind here: its remedies act on
    the library or symbol the error names, whichever row matched first. The table's wording is kept."""
    if failure.kind in LOADER_KINDS:
        return failure
    for kind in LOADER_KINDS:
        row = by_kind(kind)
        found = row.pattern.search(message) if row is not None else None
        if found:
            return replace(failure, kind=kind, named=row.named(message) or failure.named)
    return failure


def import_facts(facts: Mapping[str, Any]) -> Mapping[str, Any]:
    return facts.get("imports") or {}


def inside(path: str, root: str) -> bool:
    path, root = os.path.normpath(path), os.path.normpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def shadow_of(result: Mapping[str, Any], shadowed: Sequence[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The shadowing module whose file is on this failed import's traceback, if one is."""
    files = [frame.get("file", "") for frame in (result.get("error") or {}).get("frames", ())]
    return next((s for s in shadowed if any(inside(f, s["path"]) for f in files)), None)


def quoted(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in args)


def python_of(facts: Mapping[str, Any]) -> str:
    return shlex.quote(view_of(facts, TargetView).executable)


def reinstall(facts: Mapping[str, Any], result: Mapping[str, Any]) -> str:
    return view_of(facts, TargetView).installer_command("install", ["--force-reinstall", "--no-deps", f"{result['distribution']}=={result['version']}"])


def reproduce(facts: Mapping[str, Any], module: str) -> Remedy:
    return Remedy("See the whole error and the stack in a fresh interpreter:", f"{python_of(facts)} -X faulthandler -c {shlex.quote('import ' + module)}")


def numpy_abi_remedies(facts: Mapping[str, Any], result: Mapping[str, Any]) -> Tuple[Remedy, ...]:
    dist, numpy = result["distribution"], view_of(facts, TargetView).installed_version("numpy")
    if numpy is not None and numpy.major < 2:
        return (
            Remedy(f"This {dist} was built for NumPy 2; move NumPy to 2:", view_of(facts, TargetView).installer_command("install", ["numpy>=2"])),
            Remedy(f"Or install a {dist} release built for NumPy 1.x beside {numpy}."),
        )
    return (
        Remedy(f"Upgrade {dist} to a release built for NumPy 2:", view_of(facts, TargetView).installer_command("install", ["--upgrade", dist])),
        Remedy("Or keep NumPy 1.x for the whole environment:", view_of(facts, TargetView).installer_command("install", ["numpy<2"])),
    )


def missing_library_remedies(facts: Mapping[str, Any], result: Mapping[str, Any], library: str) -> Tuple[Remedy, ...]:
    wheel = nvidia_wheel(facts, library)
    if wheel:
        return (Remedy(f"Install {wheel}, the NVIDIA wheel that ships {library}:", view_of(facts, TargetView).installer_command("install", [wheel])),)
    package = known_provider("library", library)
    if package:
        return (Remedy(f"Install the system package that provides {library}:", f"sudo apt-get install -y {package}"),)
    return (
        Remedy(f"Install the system package that provides {library} (find it with `apt-file search {library}`), or reinstall {result['distribution']} from a wheel that bundles it:", reinstall(facts, result)),
    )


def nvidia_wheel(facts: Mapping[str, Any], library: str) -> Optional[str]:
    """The NVIDIA pip wheel that ships `library` (libcudart.so.11.0 → nvidia-cuda-runtime-cu11)."""
    match = SONAME.match(library)
    if not match:
        return None
    stem, major = match.groups()
    project = next((p for p, libraries in wheels.projects().items() if stem in libraries), None)
    if project is None:
        return None
    if project in wheels.unsuffixed_projects() and not fixed_soname(project) and major in ("11", "12", "13"):
        return project if major == "13" else f"{project}-cu{major}"
    build = view_of(facts, TargetView).torch_build
    family = wheels.torch_family(build.cuda if build else None)
    return f"{project}-{family}" if family else None


def fixed_soname(project: str) -> bool:
    return any(row["project"] == project and row["soname_major"] for row in rows("nvidia_wheels.csv"))


def known_provider(kind: str, name: str) -> Optional[str]:
    return next((row["provider"] for row in rows("import_names.csv") if row["kind"] == kind and row["name"] == name), None)


def module_provider(facts: Mapping[str, Any], result: Mapping[str, Any], module: str) -> Tuple[str, Optional[str]]:
    """The distribution that provides `module`, and the extra of the requirer that asks for it (if any):
    the requirer's own requirement of that name first, then the known names, then the module's own name."""
    top = module.split(".")[0]
    candidates = [known_provider("module", module), known_provider("module", top), top]
    requirer = view_of(facts, TargetView).distributions.get(normalize(result["distribution"])) or {}
    for requirement in parsed_requirements(requirer):
        if any(c and normalize(requirement.name) == normalize(c) for c in candidates):
            extra = EXTRA.search(str(requirement.marker or ""))
            return requirement.name, extra.group(1) if extra else None
    return next(c for c in candidates if c), None


def missing_module_remedies(facts: Mapping[str, Any], result: Mapping[str, Any], module: str) -> Tuple[Remedy, ...]:
    dist = result["distribution"]
    if module.split(".")[0] == result["module"]:
        return (Remedy(f"{dist}'s own files are missing: reinstall it.", reinstall(facts, result)),)
    provider, extra = module_provider(facts, result, module)
    if extra:
        return (Remedy(f"{module} comes with {dist}'s optional extra [{extra}]:", view_of(facts, TargetView).installer_command("install", [f"{dist}[{extra}]"])),)
    return (Remedy(f"Install {provider}, which provides {module}:", view_of(facts, TargetView).installer_command("install", [provider])),)


def binary_remedies(facts: Mapping[str, Any], result: Mapping[str, Any], failure: Failure) -> Tuple[Remedy, ...]:
    dist = result["distribution"]
    if failure.kind == "glibc":
        glibc = view_of(facts, SystemView).glibc or "?"
        return (
            Remedy(f"This build of {dist} needs {failure.named}; the system has glibc {glibc}. Reinstall it so pip picks a wheel built for this glibc:", view_of(facts, TargetView).installer_command("install", ["--force-reinstall", "--no-cache-dir", dist])),
            Remedy(f"Or run on a system whose glibc is at least {failure.named.split('_', 1)[-1]}."),
        )
    if failure.kind == "libstdcxx":
        remedies = [Remedy(f"An older libstdc++ than {dist} needs is loaded first; see which one:", f"{python_of(facts)} -c {shlex.quote('import ctypes.util; print(ctypes.util.find_library(' + repr('stdc++') + '))')}")]
        if view_of(facts, EnvironView).variables.get("LD_LIBRARY_PATH"):
            remedies.insert(0, Remedy("LD_LIBRARY_PATH can put an old libstdc++ first; try without it:", "unset LD_LIBRARY_PATH"))
        return tuple(remedies) + (Remedy("In a conda environment, update its libstdc++:", "conda install -c conda-forge libstdcxx-ng"),)
    return (Remedy(f"Reinstall {dist} so pip picks the build that matches the installed libraries it links:", view_of(facts, TargetView).installer_command("install", ["--force-reinstall", "--no-cache-dir", dist])),)


def remedies_for(facts: Mapping[str, Any], result: Mapping[str, Any], failure: Failure) -> Tuple[Remedy, ...]:
    module = result["module"]
    if failure.kind == "numpy-abi":
        return numpy_abi_remedies(facts, result)
    if failure.kind == "missing-library":
        return missing_library_remedies(facts, result, failure.named)
    if failure.kind == "missing-module":
        return missing_module_remedies(facts, result, failure.named)
    if failure.kind in ("glibc", "libstdcxx", "undefined-symbol"):
        return binary_remedies(facts, result, failure)
    if failure.kind == "timed-out":
        return (reproduce(facts, module), Remedy("If the import is only slow here, allow it more time:", "envdoctor check --imports --import-timeout 300"))
    if failure.kind == "circular-import":
        return (Remedy(f"This {result['distribution']} release cannot be imported on its own; move to another:", view_of(facts, TargetView).installer_command("install", ["--upgrade", result["distribution"]])), reproduce(facts, module))
    return (reproduce(facts, module), Remedy(f"Reinstall {result['distribution']}:", reinstall(facts, result)))


def severity_of(result: Mapping[str, Any], failure: Failure) -> Severity:
    if normalize(result["distribution"]) in STACK or failure.kind in BINARY_KINDS:
        return Severity.ERROR
    return Severity.WARNING


def failure_finding(facts: Mapping[str, Any], result: Mapping[str, Any]) -> Finding:
    failure = classify(result)
    error = result.get("error") or {}
    return Finding(
        id="imports.failed",
        severity=severity_of(result, failure),
        title=f"import {result['module']} ({result['distribution']} {result['version']}) {failure.what}: {failure.first_line}",
        explanation=f"In a fresh interpreter, importing {result['module']} from {result['distribution']} {result['version']} {failure.what}; everything that imports it fails the same way.",
        evidence={
            "module": result["module"],
            "distribution": result["distribution"],
            "version": result["version"],
            "kind": failure.kind,
            "error": failure.first_line,
            "named": failure.named or None,
            "innermost_frames": [f"{f.get('file')}:{f.get('line')} in {f.get('function')}" for f in error.get("frames", ())][:4],
            "output": (result.get("output") or "")[:1500],
        },
        remedies=remedies_for(facts, result, failure),
    )


def failed_results(facts: Mapping[str, Any]) -> List[Mapping[str, Any]]:
    return [r for r in import_facts(facts).get("modules", ()) if r.get("status") != "ok"]


def left_to_numpy(facts: Mapping[str, Any], result: Mapping[str, Any]) -> bool:
    """A NumPy-ABI failure under NumPy 2 is one cause with the others numpy.abi-mismatch names: said there, once."""
    numpy = view_of(facts, TargetView).installed_version("numpy")
    return numpy is not None and numpy.major >= 2 and classify(result).kind == "numpy-abi"


@check("imports.failed", "An installed distribution's top-level module fails to import in a fresh interpreter", requires=("imports",))
def failed(facts: Mapping[str, Any]) -> Iterable[Finding]:
    shadowed = import_facts(facts).get("shadowed", ())
    for result in failed_results(facts):
        if not shadow_of(result, shadowed) and not left_to_numpy(facts, result):  # a shadowing file: imports.shadowed names it
            yield failure_finding(facts, result)


def renamed(path: str, module: str) -> str:
    folder = os.path.dirname(path)
    return os.path.join(folder, f"{module}_local.py" if path.endswith(".py") else f"{module}_local")


def shadow_remedies(facts: Mapping[str, Any], module: str, path: str) -> Tuple[Remedy, ...]:
    """Rename the shadowing file or folder (and its stale bytecode), or take its folder off PYTHONPATH;
    then see what `import module` finds, without running it."""
    folder = os.path.dirname(path)
    move = f"mv {quoted(path, renamed(path, module))}"
    if path.endswith(".py"):
        move += f" && rm -f {shlex.quote(os.path.join(folder, '__pycache__'))}/{module}.*.pyc"
    remedies = [Remedy(f"Rename {path} so it no longer hides the installed {module}:", move)]
    entries = [e for e in view_of(facts, EnvironView).variables.get("PYTHONPATH", "").split(os.pathsep) if e]
    if any(os.path.normpath(e) == os.path.normpath(folder) for e in entries):
        rest = os.pathsep.join(e for e in entries if os.path.normpath(e) != os.path.normpath(folder))
        remedies.append(Remedy(f"Or take {folder} off PYTHONPATH:", f"export PYTHONPATH={shlex.quote(rest)}" if rest else "unset PYTHONPATH"))
    finds = f'import importlib.util; print(importlib.util.find_spec("{module}").origin)'
    remedies.append(Remedy(f"Check which file `import {module}` runs (this does not run it):", f"{python_of(facts)} -c {shlex.quote(finds)}"))
    return tuple(remedies)


def shadowing_path(frames: Iterable[Mapping[str, Any]], package: str, location: str) -> Optional[str]:
    """The file or folder named `package` on a traceback that lies outside the distribution's `location`:
    the local copy that really ran instead of the installed one."""
    for frame in frames:
        path = frame.get("file") or ""
        parts = path.split(os.sep)
        if path.startswith("<") or not location or inside(path, location):
            continue
        if parts[-1] == f"{package}.py":
            return path
        if package in parts[:-1]:
            return os.sep.join(parts[: parts.index(package) + 1])
    return None


def broken_by(facts: Mapping[str, Any], shadow: Mapping[str, Any]) -> Tuple[Optional[Mapping[str, Any]], List[str]]:
    """The shadowed module's own failed import, and the other modules whose imports it breaks."""
    own, others = None, []
    for result in failed_results(facts):
        if shadow_of(result, (shadow,)) or result["module"] == shadow["module"]:
            if result["module"] == shadow["module"]:
                own = result
            else:
                others.append(result["module"])
    return own, others


@check("imports.shadowed", "A file or folder earlier on sys.path hides an installed distribution's module", requires=("imports",))
def shadowed(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for shadow in import_facts(facts).get("shadowed", ()):
        own, others = broken_by(facts, shadow)
        module, dist = shadow["module"], f"{shadow['distribution']} {shadow['version']}"
        consequences = ([f"Importing it fails: {error_line(own)}."] if own else []) + ([f"It also breaks: {', '.join(sorted(others))}."] if others else [])
        yield Finding(
            id="imports.shadowed",
            severity=Severity.ERROR if own or others or normalize(shadow["distribution"]) in STACK else Severity.WARNING,
            title=f"import {module} runs {shadow['path']} ({shadow.get('source')}), not the installed {dist}",
            explanation=" ".join(
                [f"{shadow.get('sys_path_entry')} ({shadow.get('source')}) comes before site-packages on sys.path, so `import {module}` runs {shadow['path']} instead of {shadow['distribution_path']}."]
                + consequences
            ),
            evidence={**dict(shadow), "import_error": error_line(own) if own else None, "breaks": sorted(others)},
            remedies=shadow_remedies(facts, module, shadow["path"]),
        )


def location_of(facts: Mapping[str, Any], distribution: str) -> Optional[str]:
    dist: Dict[str, Any] = view_of(facts, TargetView).distributions.get(normalize(distribution)) or {}
    return dist.get("location")
