"""A report built by hand: a WSL2 machine with a Linux driver inside it, mixed CUDA wheels and
KMP_DUPLICATE_LIB_OK set, whose findings carry every kind of remedy (a shell line, a Python snippet,
none); tests/data/render/report.txt, report-verbose.txt and report.md are its golden views."""

from envdoctor.model import PYTHON, CheckRun, CheckStatus, Finding, Remedy, Report, Severity

WSL2_REPORT = Report(
    tool_version="0.1.0",
    created="2026-11-22T12:00:00+00:00",
    target_python="/home/me/venv/bin/python",
    facts={
        "system": {"distro": {"PRETTY_NAME": "Ubuntu 22.04.4 LTS"}, "kernel_release": "5.15.153.1-microsoft-standard-WSL2", "glibc": "2.35"},
        "cpu": {"model": "Intel(R) Core(TM) i7-8700", "usable_cpus": 12, "logical_cores": 12},
        "memory": {"ram_total_bytes": 16 * 2**30, "swap_total_bytes": 4 * 2**30, "shm_total_bytes": 8 * 2**30},
        "target": {
            "python": {"version": "3.10.12", "executable": "~/venv/bin/python"},
            "torch_build": {"version": "2.3.1+cu121", "cuda": "12.1"},
            "distributions": [{"name": n, "version": v} for n, v in (("torch", "2.3.1+cu121"), ("nvidia-cudnn-cu12", "8.9.2.26"), ("nvidia-cuda-nvrtc-cu11", "11.8.89"), ("numpy", "1.26.4"), ("stable_baselines3", "2.3.2"), ("Gymnasium", "0.29.1"))],
        },
        "gpu": {"driver": {"version": "552.22", "cuda": "12.4"}, "gpus": [{"name": "NVIDIA GeForce RTX 3060", "compute_capability": "8.6", "memory_total_bytes": 12 * 2**30}]},
    },
    findings=(
        Finding(
            id="wsl.linux-driver-inside",
            severity=Severity.ERROR,
            title="A Linux NVIDIA driver is installed inside WSL2",
            explanation="Under WSL2 the only working libcuda is the Windows driver's.",
            evidence={"libcuda_outside_wsl": ["/usr/lib/x86_64-linux-gnu/libcuda.so.1"]},
            remedies=(Remedy("Find the package:", "dpkg -S /usr/lib/x86_64-linux-gnu/libcuda.so.1"), Remedy("Then remove it.")),
            references=("https://docs.nvidia.com/cuda/wsl-user-guide/index.html",),
        ),
        Finding(id="wsl.kernel", severity=Severity.INFO, title="Running under WSL2", explanation="Windows driver only.",
                remedies=(Remedy("If CUDA runs out of memory with pinned buffers, disable pinning:", "DataLoader(..., pin_memory=False)", PYTHON),)),
        Finding(id="wheels.mixed-cuda-families", severity=Severity.WARNING, title="NVIDIA wheels of two CUDA families",
                remedies=(Remedy("Uninstall the wheels torch does not use:", "'/home/me/a venv/bin/python' -m pip uninstall -y nvidia-cuda-nvrtc-cu11 nvidia-cudnn-cu11 nvidia-cublas-cu11"),)),
        Finding(id="threads.kmp-duplicate-lib-ok", severity=Severity.WARNING, title="KMP_DUPLICATE_LIB_OK | is set",
                remedies=(Remedy("Unset it:", "unset KMP_DUPLICATE_LIB_OK"),)),
    ),
    checks=(
        CheckRun("wsl.kernel", CheckStatus.FOUND, 0.1),
        CheckRun("wsl.linux-driver-inside", CheckStatus.FOUND, 0.1),
        CheckRun("cpu.missing-instructions", CheckStatus.PASSED, 0.2),
        CheckRun("threads.kmp-duplicate-lib-ok", CheckStatus.FOUND, 0.1),
        CheckRun("memory.shm-small", CheckStatus.SKIPPED, 0.0, "memory facts could not be gathered: OSError: boom"),
    ),
    timings_ms={"collect.system": 3.0, "judge": 1.0},
)
