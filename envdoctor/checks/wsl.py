"""WSL checks: WSL1 cannot run CUDA; WSL2 runs it through the Windows driver only.

Markers and rules: docs/knowledge/domain-facts.md §5 (microsoft/WSL#423, #4555, #8447, #8587; NVIDIA CUDA on WSL
user guide); which kind this is the system view says (facts/system.py), from every marker together, since
custom WSL2 kernels can carry any release string (sindresorhus/is-wsl#13).
"""

from __future__ import annotations

import shlex
from typing import Any, Iterable, Mapping

from envdoctor.checks import check
from envdoctor.facts import view_of
from envdoctor.facts.system import SystemView
from envdoctor.model import POWERSHELL, PYTHON, Finding, Remedy, Severity

WSL_GUIDE = "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"
def wsl1_finding(system: SystemView) -> Finding:
    return Finding(
        id="wsl.kernel",
        severity=Severity.ERROR,
        title="WSL1 cannot run CUDA: PyTorch will only ever see the CPU",
        explanation=(
            "WSL1 translates Linux system calls and has no GPU paravirtualization; CUDA needs WSL2. "
            "Native libraries that probe the kernel also misbehave under WSL1's 4.4 compatibility kernel."
        ),
        evidence={"kernel_release": system.kernel_release, "markers": system.seen_markers},
        remedies=(
            Remedy("In Windows PowerShell, convert this distribution to WSL2 (`wsl -l -v` lists their names):", "wsl --set-version <distro> 2", POWERSHELL),
            Remedy("Then install only the Windows NVIDIA driver; nothing driver-related inside Linux."),
        ),
        references=("https://learn.microsoft.com/windows/wsl/install", WSL_GUIDE),
    )


def wsl2_finding(system: SystemView) -> Finding:
    custom = "microsoft" not in (system.kernel_release or "").lower()
    no_gpu_device = not system.wsl_markers.get("/dev/dxg")
    advice = (
        "CUDA under WSL2 goes through the Windows driver, which projects libcuda.so.1 and nvidia-smi into "
        "/usr/lib/wsl/lib. Never install a Linux NVIDIA driver (or the `cuda`/`cuda-drivers` packages) "
        "inside WSL2. Pinned host memory is limited: CUDA out-of-memory with pin_memory=True at about half "
        "of the GPU's memory is fixed by pin_memory=False."
    )
    if custom:
        advice += " This is a custom kernel: it needs the dxgkrnl driver for the GPU to appear as /dev/dxg."
    if no_gpu_device:
        advice += " /dev/dxg is missing, so no GPU is visible to CUDA in this distribution."
    return Finding(
        id="wsl.kernel",
        severity=Severity.WARNING if no_gpu_device else Severity.INFO,
        title=f"Running under WSL2{' (custom kernel)' if custom else ''}: CUDA works through the Windows driver only",
        explanation=advice,
        evidence={"kernel_release": system.kernel_release, "markers": system.seen_markers},
        remedies=(
            Remedy("Keep the Windows NVIDIA driver current; check it from Windows with nvidia-smi.exe."),
            Remedy("If CUDA runs out of memory with pinned buffers, disable pinning:", "DataLoader(..., pin_memory=False)", PYTHON),
        ),
        references=(WSL_GUIDE, "https://github.com/microsoft/WSL/issues/8447"),
    )


@check("wsl.kernel", "WSL1 vs WSL2 and what each means for CUDA", requires=("system",))
def wsl_kernel(facts: Mapping[str, Any]) -> Iterable[Finding]:
    system = view_of(facts, SystemView)
    kind = system.wsl_kind
    if kind == "wsl1":
        yield wsl1_finding(system)
    elif kind == "wsl2":
        yield wsl2_finding(system)
    elif system.wsl_variables:
        yield copied_variables_note(system)


def copied_variables_note(system: SystemView) -> Finding:
    """WSL's variables without its kernel or filesystem: they came along, WSL did not."""
    names = system.wsl_variables
    return Finding(
        id="wsl.kernel",
        severity=Severity.INFO,
        title="WSL variables are set but this kernel is not WSL's: copied environment?",
        explanation=(
            f"{' and '.join(names)} {'is' if len(names) == 1 else 'are'} set, but neither the kernel "
            "(/proc/sys/kernel/osrelease, /proc/version) nor the filesystem (/usr/lib/wsl, /run/WSL, the WSLInterop "
            "binfmt entry) is WSL's. They came with a copied environment or a container started from a WSL shell; "
            "this machine is judged as native Linux."
        ),
        evidence={"variables": names, "kernel_release": system.kernel_release, "proc_version": system.proc_version},
        remedies=(Remedy("If nothing here runs under WSL, drop them:", f"unset {' '.join(names)}"),),
    )


@check("wsl.linux-driver-inside", "A Linux NVIDIA driver installed inside WSL2", requires=("system",))
def linux_driver_inside(facts: Mapping[str, Any]) -> Iterable[Finding]:
    system = view_of(facts, SystemView)
    libraries = list(system.libcuda_outside_wsl)
    if system.wsl_kind != "wsl2" or not libraries:
        return
    yield Finding(
        id="wsl.linux-driver-inside",
        severity=Severity.ERROR,
        title="A Linux NVIDIA driver is installed inside WSL2 and shadows the Windows driver's libcuda",
        explanation=(
            "Under WSL2 the only working libcuda is the one the Windows driver projects into /usr/lib/wsl/lib. "
            "A Linux driver's libcuda is found first and fails or crashes at CUDA initialisation."
        ),
        evidence={"libcuda_outside_wsl": libraries},
        remedies=(
            Remedy("Find the package that installed it:", f"dpkg -S {shlex.quote(libraries[0])}"),
            Remedy("Remove that package (for example the Linux driver):", "sudo apt-get purge 'nvidia-driver-*' 'libnvidia-compute-*'"),
            Remedy("Refresh the linker cache:", "sudo ldconfig"),
        ),
        references=(WSL_GUIDE,),
    )
