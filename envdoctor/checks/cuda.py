"""CUDA checks: whether torch's CUDA build can run on this driver and these GPUs, and which system
libraries or toolkits get in its way.

Tables: knowledge/drivers.py (minimum drivers, NVIDIA minor-version compatibility), arches.py
(kernels per variant) and torch_matrix.py (which release has which variant, and its install form).
Sources per row in the data files; background in docs/knowledge/domain-facts.md §1, §2, §3, §4.
The installed torch speaks first: the arch list its probe recorded (torch.cuda.get_arch_list())
judges the GPUs, and the tables are only the fallback; the CUDA runtime comes from torch/version.py.
"""

from __future__ import annotations

import shlex
from typing import Any, Callable, Iterable, List, Mapping, Optional, Tuple

from packaging.utils import canonicalize_name

from envdoctor.checks import check
from envdoctor.facts import view_of
from envdoctor.facts.environ import EnvironView
from envdoctor.facts.gpu import GpuView
from envdoctor.facts.libraries import LibrariesView
from envdoctor.facts.probe import probe_of
from envdoctor.facts.requirements import parsed_requirements
from envdoctor.facts.system import SystemView
from envdoctor.facts.target import TargetView, TorchBuild
from envdoctor.knowledge import arches, drivers, minor_of, torch_matrix, version_tuple, wheels
from envdoctor.knowledge.drivers import DRIVER_DOWNLOAD
from envdoctor.knowledge.torch_matrix import TorchRelease
from envdoctor.model import Finding, Remedy, Severity
from envdoctor.probe.result import StageStatus

COMPANIONS = ("torch", "torchvision", "torchaudio")
COMPATIBILITY_DOC = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"

VariantFilter = Callable[[TorchRelease, str], bool]
RECORDED_SOURCE = "torch.cuda.get_arch_list() recorded by the probe"
ARTIFACT_SOURCE = "the fatbins of torch's CUDA libraries"
RUNTIME_WHEELS = ("nvidia-cuda-runtime", "cuda-toolkit")


def driver_runs(facts: Mapping[str, Any], cuda: str, via_ptx: bool = False) -> bool:
    """Whether this machine's driver runs CUDA `cuda` (the toolkit's own driver when kernels come from PTX)."""
    version = view_of(facts, GpuView).driver.get("version")
    if version:
        row = drivers.requirement(cuda)
        if via_ptx and row is not None and row.toolkit(view_of(facts, TargetView).host_os):
            return version_tuple(version) >= version_tuple(row.toolkit(view_of(facts, TargetView).host_os))
        return drivers.driver_satisfies(version, cuda, view_of(facts, TargetView).host_os)
    reported = view_of(facts, GpuView).driver.get("cuda")
    if not reported:
        return True
    wanted, have = version_tuple(cuda), version_tuple(reported)
    return have[0] >= wanted[0] if wanted[0] >= 11 and not via_ptx else have >= wanted


def wheel_platform(facts: Mapping[str, Any]) -> str:
    """x86_64 or aarch64: whose arch lists apply, from the diagnosed interpreter's machine (else the host's)."""
    return arches.platform_of(view_of(facts, TargetView).python.get("machine") or view_of(facts, SystemView).machine or arches.X86_64)


def arch_support(facts: Mapping[str, Any], release: TorchRelease, cuda: str) -> List[Optional[str]]:
    tag = torch_matrix.variant_tag(cuda)
    return [arches.support(g["compute_capability"], tag, release.torch, wheel_platform(facts)) for g in view_of(facts, GpuView).gpus if g.get("compute_capability")]


def runs_here(facts: Mapping[str, Any], release: TorchRelease, cuda: str) -> bool:
    """A variant whose kernels are cubins for every GPU here and whose CUDA this driver runs."""
    return all(s == arches.SASS for s in arch_support(facts, release, cuda)) and driver_runs(facts, cuda)


def choose_variant(facts: Mapping[str, Any], current: Optional[TorchRelease], accept: VariantFilter) -> Optional[Tuple[TorchRelease, str]]:
    """The newest acceptable CUDA variant of the installed release, else of the nearest newer release
    that has wheels for the target's Python; for a torch the tables do not know (most likely newer
    than them) the nearest is the newest known release."""
    python = view_of(facts, TargetView).python_minor
    if current is None:
        candidates = list(reversed(torch_matrix.releases()))
    else:
        candidates = [current] + [r for r in torch_matrix.releases() if version_tuple(r.torch) > version_tuple(current.torch)]
    for release in candidates:
        if python and python not in release.python:
            continue
        for cuda in sorted(release.cuda, key=version_tuple, reverse=True):
            if accept(release, cuda):
                return release, cuda
    return None


def installed_companions(facts: Mapping[str, Any]) -> List[str]:
    names = {d["name"].lower() for d in view_of(facts, TargetView).distribution_list}
    return [p for p in COMPANIONS if p in names]


def reinstall_remedies(facts: Mapping[str, Any], build: TorchBuild, release: TorchRelease, cuda: str, why: str) -> List[Remedy]:
    """Remove the wheels of a CUDA family the new build will not use, then install the build."""
    remedies = []
    old, new = wheels.torch_family(build.cuda), wheels.torch_family(cuda)
    strays = [d["name"] for d in view_of(facts, TargetView).families.get(old, ())] if old and old != new else []
    if strays:
        remedies.append(Remedy(f"Remove the {old} NVIDIA wheels the new build will not use:", view_of(facts, TargetView).installer_command("uninstall", strays)))
    args = torch_matrix.install_args(release, cuda, installed_companions(facts) or ["torch"])
    remedies.append(Remedy(f"Install torch {release.torch} built for CUDA {cuda} ({why}):", view_of(facts, TargetView).installer_command("install", args)))
    remedies.append(Remedy(
        "Or let envdoctor plan the same change (it also removes packages pinning the old torch); add --apply to carry it out, recorded and reversible:",
        f"envdoctor fix --pin-cuda {minor_of(cuda)} --torch {release.torch} --python {shlex.quote(view_of(facts, TargetView).executable)}",
    ))
    return remedies


def cuda_build(facts: Mapping[str, Any]) -> Optional[TorchBuild]:
    build = view_of(facts, TargetView).torch_build
    return build if build is not None and build.cuda else None


def recorded_cuda(facts: Mapping[str, Any], build: TorchBuild) -> Mapping[str, Any]:
    """What the probe's CUDA stage recorded about this torch (arch_list, runtime, capability); empty
    when no probe ran, the stage did not pass, or the probe imported another torch than the one installed."""
    probe = probe_of(facts)
    if probe is None:
        return {}
    imported, stage = probe.stage("import_torch"), probe.stage("cuda_init")
    if stage is None or stage.status is not StageStatus.PASSED or not isinstance(stage.details.get("arch_list"), list):
        return {}
    version = imported.details.get("version") if imported else None
    return stage.details if version in (None, build.build_version) else {}


def recorded_kernels(facts: Mapping[str, Any], build: TorchBuild) -> Optional[arches.ArchList]:
    flags = recorded_cuda(facts, build).get("arch_list")
    if flags is None:
        return None
    return arches.from_arch_flags(flags, torch_matrix.variant_tag(build.cuda), build.version, RECORDED_SOURCE, wheel_platform(facts))


def artifact_kernels(facts: Mapping[str, Any], build: TorchBuild) -> Optional[arches.ArchList]:
    """The kernels read from the installed torch's libraries (collect/fatbin.py), when they were read whole."""
    flags = view_of(facts, TargetView).torch_kernels.get("arch_list")
    if not flags:
        return None
    return arches.from_arch_flags(flags, torch_matrix.variant_tag(build.cuda), build.version, ARTIFACT_SOURCE, wheel_platform(facts))


def true_kernels(facts: Mapping[str, Any], build: TorchBuild) -> Optional[arches.ArchList]:
    """What the installed torch itself says it ships: as it reported to the probe, else as its libraries hold."""
    return recorded_kernels(facts, build) or artifact_kernels(facts, build)


def table_kernels(facts: Mapping[str, Any], build: TorchBuild) -> Optional[arches.ArchList]:
    return arches.arch_list(torch_matrix.variant_tag(build.cuda), build.version, wheel_platform(facts))


def shipped_kernels(facts: Mapping[str, Any], build: TorchBuild) -> Optional[arches.ArchList]:
    """The kernels of the installed build: as torch reported them when the probe ran, else as its libraries'
    fatbins hold them, else the table's row; None when none knows (a torch or variant newer than the
    tables, its libraries unread), which is never read as "fine"."""
    return true_kernels(facts, build) or table_kernels(facts, build)


def pinned_cuda_runtime(facts: Mapping[str, Any]) -> Optional[str]:
    """The CUDA x.y that torch's metadata pins its runtime wheel to (nvidia-cuda-runtime-cu12==12.8.90,
    cuda-toolkit[cudart]==13.0.2); None for a torch that brings its own libraries or pins none."""
    for requirement in parsed_requirements(view_of(facts, TargetView).distributions.get("torch") or {}):
        name = wheels.project_of(canonicalize_name(requirement.name))
        pins = [s.version for s in requirement.specifier if s.operator == "=="]
        if name in RUNTIME_WHEELS and pins and version_tuple(pins[0]):
            return minor_of(pins[0])
    return None


@check(
    "cuda.driver-too-old", "The NVIDIA driver is too old for the CUDA runtime torch was built with",
    requires=("target", "gpu"), disproved_by=("cuda_init", "cuda_matmul"),
)
def driver_too_old(facts: Mapping[str, Any]) -> Iterable[Finding]:
    build = cuda_build(facts)
    if build is None or not view_of(facts, GpuView).driver:
        return
    release = torch_matrix.find(build.version)
    shipped = shipped_kernels(facts, build)
    via_ptx = shipped is not None and any(shipped.support(g["compute_capability"]) == arches.PTX for g in view_of(facts, GpuView).gpus if g.get("compute_capability"))
    if driver_runs(facts, build.cuda, via_ptx):
        return
    system = view_of(facts, TargetView).host_os
    row = drivers.requirement(build.cuda)
    least = (row.toolkit(system) if via_ptx and row else None) or drivers.minimum_driver(build.cuda, system)
    compat = row.minor_compat(system) if row else None
    found = view_of(facts, GpuView).driver.get("version") or f"one supporting CUDA {view_of(facts, GpuView).driver.get('cuda')}"
    remedies = [Remedy(f"Update the NVIDIA driver to {least or 'a newer branch'} or newer ({DRIVER_DOWNLOAD}), or:")]
    alternative = choose_variant(facts, release, lambda r, c: runs_here(facts, r, c))
    if alternative and build.cuda and alternative[1] != minor_of(build.cuda):
        remedies += reinstall_remedies(facts, build, *alternative, why="this driver runs it")
    yield Finding(
        id="cuda.driver-too-old",
        severity=Severity.ERROR,
        title=f"The NVIDIA driver {found} cannot run torch {build.build_version} (CUDA {build.cuda}); it needs {least or 'a newer driver'}",
        explanation=(
            (f"This driver supports CUDA up to {view_of(facts, GpuView).driver['cuda']}; " if view_of(facts, GpuView).driver.get("cuda") else "")
            + f"torch was built with CUDA {build.cuda}. "
            + (
                f"Through NVIDIA's minor-version compatibility any driver from {compat} runs CUDA {minor_of(build.cuda).split('.')[0]}.x wheels; "
                f"the driver shipped with CUDA {minor_of(build.cuda)} is {row.toolkit(system)}. "
                if compat and row and row.toolkit(system)
                else "Minor-version compatibility does not apply to this CUDA, so it needs its toolkit's own driver. "
            )
            + ("Some GPU here runs torch only through PTX JIT compilation, which needs the toolkit's own driver. " if via_ptx else "")
            + "Until then torch.cuda.is_available() is False (\"The NVIDIA driver on your system is too old\") or CUDA calls fail."
        ),
        evidence={"driver": dict(view_of(facts, GpuView).driver), "torch_cuda": build.cuda, "minimum_driver": least, "minor_compat_floor": compat, "via_ptx": via_ptx},
        remedies=tuple(remedies),
        references=(COMPATIBILITY_DOC, DRIVER_DOWNLOAD),
    )


KERNEL_SOURCES = {RECORDED_SOURCE: "as torch itself reported to the probe", ARTIFACT_SOURCE: "as read from the fatbins of its CUDA libraries"}


def tegra_note(capability: str) -> str:
    if capability not in arches.IGPU_ONLY:
        return ""
    return (f"Compute capability {capability} is a Tegra (Jetson) GPU: it runs only cubins built for it, not those of the "
            "discrete GPUs of its major (torch's DEVICE_REQUIREMENT). ")


def arch_finding(facts, build: TorchBuild, gpu: Mapping[str, Any], tag: str, shipped: arches.ArchList) -> Finding:
    capability = gpu["compute_capability"]
    release = torch_matrix.find(build.version)

    def supported(candidate: TorchRelease, cuda: str) -> bool:
        return arches.support(capability, torch_matrix.variant_tag(cuda), candidate.torch, wheel_platform(facts)) == arches.SASS and driver_runs(facts, cuda)

    alternative = choose_variant(facts, release, supported)
    remedies = reinstall_remedies(facts, build, *alternative, why=f"it has kernels for sm_{capability.replace('.', '')}") if alternative else [
        Remedy(f"No official torch wheel ships kernels for compute capability {capability}; build torch from source with TORCH_CUDA_ARCH_LIST={capability}.")
    ]
    return Finding(
        id="cuda.gpu-arch-unsupported",
        severity=Severity.ERROR,
        title=f"GPU {gpu.get('index')} ({gpu.get('name')}, sm_{capability.replace('.', '')}) has no kernels in torch {build.build_version} ({tag})",
        explanation=(
            f"The {tag} build of torch ships kernels for {shipped.describe()} ({KERNEL_SOURCES.get(shipped.source, 'knowledge table arches.csv')}). A cubin runs only on GPUs "
            "of the same major capability, so CUDA calls on this GPU fail with \"no kernel image is available for execution "
            "on the device\". " + tegra_note(capability) + f"{wheel_platform(facts)} variants with kernels for it: "
            + (", ".join(arches.variants_supporting(capability, platform=wheel_platform(facts))) or "none") + "."
        ),
        evidence={
            "gpu": gpu.get("name"), "compute_capability": capability, "variant": tag, "platform": wheel_platform(facts),
            "shipped": list(shipped.sass), "ptx": list(shipped.ptx), "arch_list_source": shipped.source,
        },
        remedies=tuple(remedies),
        references=("https://pytorch.org/get-started/locally/",),
    )


@check("cuda.gpu-arch-unsupported", "A GPU whose compute capability the torch build has no kernels for", requires=("target", "gpu"))
def gpu_arch_unsupported(facts: Mapping[str, Any]) -> Iterable[Finding]:
    build = cuda_build(facts)
    if build is None:
        return
    shipped = shipped_kernels(facts, build)
    if shipped is None:
        return  # doctor.knowledge-stale says that the arch support is unknown
    for gpu in view_of(facts, GpuView).gpus:
        if gpu.get("compute_capability") and shipped.support(gpu["compute_capability"]) is None:
            yield arch_finding(facts, build, gpu, shipped.variant, shipped)


@check("cuda.cpu-build-on-gpu-host", "A CPU-only torch on a machine with a working NVIDIA GPU", requires=("target", "gpu"))
def cpu_build_on_gpu_host(facts: Mapping[str, Any]) -> Iterable[Finding]:
    build = view_of(facts, TargetView).torch_build
    present = view_of(facts, GpuView).gpus
    if build is None or not build.is_cpu or not present:
        return
    release = torch_matrix.find(build.version)
    alternative = choose_variant(facts, release, lambda r, c: runs_here(facts, r, c)) if release else None
    remedies = reinstall_remedies(facts, build, *alternative, why="this driver and GPU run it") if alternative else [
        Remedy("Install a CUDA build of torch for this GPU and driver:", "https://pytorch.org/get-started/locally/")
    ]
    yield Finding(
        id="cuda.cpu-build-on-gpu-host",
        severity=Severity.WARNING,
        title=f"torch {build.build_version} is a CPU-only build, but this machine has {len(present)} NVIDIA GPU(s) ({present[0].get('name')})",
        explanation="torch.cuda.is_available() is False with this build, so training silently runs on the CPU.",
        evidence={"torch": build.build_version, "gpus": [g.get("name") for g in present], "driver": dict(view_of(facts, GpuView).driver)},
        remedies=tuple(remedies),
    )


def wheel_libraries(facts: Mapping[str, Any]) -> dict:
    """library name -> (soname major, version, wheel) for every library the installed NVIDIA wheels ship."""
    shipped = {}
    for dists in view_of(facts, TargetView).families.values():
        for dist in dists:
            major = wheels.soname_major(dist["name"], dist["version"])
            for library in wheels.libraries_of(dist["name"]):
                shipped[library] = (major, dist["version"], dist["name"])
    return shipped


def library_family(name: str) -> str:
    """cuDNN's sub-libraries (libcudnn_graph) belong with libcudnn."""
    return "libcudnn" if name.startswith("libcudnn") else name


def same_version(a: str, b: str) -> bool:
    """ "9.10.2" and "9.10.2.21" name one release; a file that tells only its major ("12") is given the benefit of the doubt."""
    x, y = version_tuple(a), version_tuple(b)
    n = min(len(x), len(y))
    return x[:n] == y[:n]


def shadowing_severity(entry: Mapping[str, Any], wheel_major: Optional[int], wheel_version: str) -> Optional[Severity]:
    """A copy of another soname major (libcudart.so.11.0 beside the wheel's libcudart.so.12) never stands in
    for the wheel's: the loader looks libraries up by soname. Of the same soname, LD_PRELOAD always wins
    (error); LD_LIBRARY_PATH mixes sub-libraries of one soname (error) unless it is the same version. A
    preloaded other major is loaded into every process all the same (warning). The linker cache only answers
    bare-soname lookups that torch's RPATH and preloading do not reach: on an H100 with torch 2.11+cu130 and
    a cached system cuDNN 9.14, every cuDNN library in the process was the wheel's 9.19
    (reports/samples/h100-cu130-cudnn-maps.txt), so it is only a note."""
    same_major = entry["major"] == wheel_major
    if entry["via"] == "LD_PRELOAD":
        return Severity.ERROR if same_major else Severity.WARNING
    if not same_major:
        return None
    if entry["via"] == "LD_LIBRARY_PATH":
        return None if same_version(entry["version"], wheel_version) else Severity.ERROR
    if entry["library"].startswith("libcudnn") and not same_version(entry["version"], wheel_version):
        return Severity.INFO
    return None


def shadowing_remedies(facts, offending: List[dict]) -> Tuple[Remedy, ...]:
    remedies = []
    if any(e["via"] == "LD_PRELOAD" for e in offending):
        remedies.append(Remedy("Stop preloading CUDA libraries:", "unset LD_PRELOAD"))
    bad_dirs = {e["path"].rsplit("/", 1)[0] for e in offending if e["via"] == "LD_LIBRARY_PATH"}
    if bad_dirs:
        kept = [d for d in view_of(facts, EnvironView).variables.get("LD_LIBRARY_PATH", "").split(":") if d and d not in bad_dirs]
        command = f"export LD_LIBRARY_PATH={shlex.quote(':'.join(kept))}" if kept else "unset LD_LIBRARY_PATH"
        remedies.append(Remedy(f"Take {', '.join(sorted(bad_dirs))} out of LD_LIBRARY_PATH (torch brings its own CUDA libraries):", command))
    cached = [e["path"] for e in offending if e["via"] == "ldconfig"]
    if cached:
        remedies.append(Remedy("Find the system packages that installed the cached copies, and remove them if nothing else needs them:", f"dpkg -S {shlex.join(cached)}"))
    return tuple(remedies)


@check("cuda.library-shadowing", "System CUDA/cuDNN libraries the loader finds before the wheels' own", requires=("target", "libraries"))
def library_shadowing(facts: Mapping[str, Any]) -> Iterable[Finding]:
    shipped = wheel_libraries(facts)
    offending = []
    for entry in view_of(facts, LibrariesView).found:
        wheel = shipped.get(library_family(entry["library"]))
        severity = shadowing_severity(entry, wheel[0], wheel[1]) if wheel else None
        if severity is not None:
            offending.append({**entry, "severity": severity, "wheel": f"{wheel[2]}=={wheel[1]}"})
    if not offending:
        return
    worst = max((e["severity"] for e in offending), key=lambda s: s.rank)
    build = cuda_build(facts)
    if build is None:  # torch loads none of the wheels' CUDA libraries; another package still may
        worst = min(worst, Severity.WARNING, key=lambda s: s.rank)
    yield Finding(
        id="cuda.library-shadowing",
        severity=worst,
        title=f"{len(offending)} system CUDA librar{'y' if len(offending) == 1 else 'ies'} can be loaded instead of the wheels' own ("
        + ", ".join(f"{e['library']}.so.{e['major']} via {e['via']}" for e in offending[:3]) + ")",
        explanation=(
            "LD_PRELOAD wins over everything; LD_LIBRARY_PATH wins over the RUNPATH through which the wheels' libcublas finds "
            "libcublasLt and cuDNN finds its sub-libraries; the linker cache answers only bare-soname lookups that nothing "
            "else resolved, e.g. from a library imported before torch. Two versions of one library in a process end in "
            "\"undefined symbol\", cuDNN version errors or a segfault inside libcuda."
            + ("" if build else " The installed torch is no CUDA build, so it loads none of these libraries: only another "
               "package that loads the NVIDIA wheels' CUDA libraries is at risk.")
        ),
        evidence={"libraries": [{k: (v.value if isinstance(v, Severity) else v) for k, v in e.items()} for e in offending]},
        remedies=shadowing_remedies(facts, offending),
        references=(
            "https://github.com/pytorch/pytorch/issues/104808",
            "https://github.com/pytorch/pytorch/issues/121222",
            "https://github.com/pytorch/pytorch/issues/91067",
        ),
    )


@check("cuda.nvcc-mismatch", "nvcc on PATH targets another CUDA than torch (matters for building extensions)", requires=("target", "libraries"))
def nvcc_mismatch(facts: Mapping[str, Any]) -> Iterable[Finding]:
    build = cuda_build(facts)
    nvcc = view_of(facts, LibrariesView).nvcc
    if build is None or not nvcc.get("version") or minor_of(nvcc["version"]) == minor_of(build.cuda):
        return
    major_differs = nvcc["version"].split(".")[0] != build.cuda.split(".")[0]
    toolkit = nvcc["path"].rsplit("/bin/", 1)[0] if "/bin/" in nvcc["path"] else None
    yield Finding(
        id="cuda.nvcc-mismatch",
        severity=Severity.INFO,
        title=f"nvcc on PATH is CUDA {nvcc['version']}, torch {build.build_version} uses CUDA {build.cuda}",
        explanation=(
            "This matters only when building CUDA extensions (pip install of packages with CUDA sources, "
            "torch.utils.cpp_extension): "
            + ("torch refuses to build with a toolkit of another major version." if major_differs else "a different minor version builds, with a warning.")
        ),
        evidence={"nvcc": dict(nvcc), "torch_cuda": build.cuda, "toolkit": toolkit},
        remedies=(Remedy(f"Point extension builds at a CUDA {minor_of(build.cuda)} toolkit:", f"export CUDA_HOME=/usr/local/cuda-{minor_of(build.cuda)}"),),
    )
