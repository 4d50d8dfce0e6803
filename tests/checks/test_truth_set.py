"""A held-out set: real recorded reports edited to driver / torch / GPU / platform / NumPy combinations
whose truth was read from the sources (not from envdoctor's tables), each judged as a whole.

Every case names its source. The arch truths come from torch's own tables in torch 2.13's
torch/cuda/__init__.py (PYTORCH_RELEASES_CODE_CC by host arch, DEVICE_REQUIREMENT) and from arch
lists torch printed (docs/knowledge/arch-sources.md); the driver truths from NVIDIA's CUDA release
notes (docs/knowledge/driver-table-sources.md); the NumPy truths from the projects' release notes and
metadata (numpy2.csv's sources) and torch's NumPy 2 support from 2.3 (pytorch#107302).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest

from conftest import REPO, findings_by_id

MEASURED_H100 = REPO / "tests" / "data" / "gpu" / "h100-driver580-cu130.json"  # check --no-probe on an H100, torch 2.11.0+cu130 from PyPI
PROBED_H100 = REPO / "reports" / "samples" / "h100-cu130.json"  # the same machine with the probe
H100_ARCH_LIST = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
Change = Callable[[dict], None]


def torch(version: str, cuda: Optional[str]) -> Change:
    def change(facts):
        facts["target"]["torch_build"].update(version=version, cuda=cuda)
        next(d for d in facts["target"]["distributions"] if d["name"] == "torch")["version"] = version.split("+")[0]
    return change


def gpu(name: str, capability: str) -> Change:
    def change(facts):
        facts["gpu"]["gpus"][0].update(name=name, compute_capability=capability)
    return change


def driver(version: str, cuda: str) -> Change:
    def change(facts):
        facts["gpu"]["driver"] = {"version": version, "cuda": cuda}
    return change


def machine(name: str) -> Change:
    def change(facts):
        facts["target"]["python"]["machine"] = name
        facts["system"]["machine"] = name
    return change


def installed(name: str, version: str, *requires: str) -> Change:
    def change(facts):
        dists = facts["target"]["distributions"]
        dists[:] = [d for d in dists if d["name"].lower() != name.lower()]
        dists.append({"name": name, "version": version, "location": "/opt/venv/lib/python3.12/site-packages", "requires": list(requires)})
    return change


def kernels_read(flags: List[str]) -> Change:
    def change(facts):
        facts["target"]["torch_kernels"] = {"files": ["/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"], "arch_list": flags}
    return change


def only_numpy_stack(facts):
    """The NumPy cases judge only the packages they name: the recorded venv's own are left out."""
    facts["target"]["distributions"] = [d for d in facts["target"]["distributions"] if d["name"].lower() in ("torch", "numpy")]


RTX_5090, V100, H100, B200 = gpu("NVIDIA GeForce RTX 5090", "12.0"), gpu("Tesla V100-SXM2-16GB", "7.0"), gpu("NVIDIA H100 80GB HBM3", "9.0"), gpu("NVIDIA B200", "10.0")
NO_ARCH = {"cuda.gpu-arch-unsupported": None, "doctor.knowledge-stale": None}
UNSUPPORTED = {"cuda.gpu-arch-unsupported": "error", "doctor.knowledge-stale": None}

# (id, base report, changes, expected severity per check id (None: no finding), source of the truth)
CASES = [
    ("h100-2.11-cu130-pypi", MEASURED_H100, [], {**NO_ARCH, "cuda.driver-too-old": None}, "CODE_CC 13.0 x86_64 has 90; driver 580 is CUDA 13.0's"),
    ("rtx5090-2.5.1-cu124", MEASURED_H100, [RTX_5090, torch("2.5.1+cu124", "12.4"), driver("570.124.06", "12.8")], UNSUPPORTED, "2.5 wheels list sm_50..sm_90, no compute_90 (arch-sources.md)"),
    ("rtx5090-2.7.1-cu128", MEASURED_H100, [RTX_5090, torch("2.7.1+cu128", "12.8"), driver("570.124.06", "12.8")], NO_ARCH, "2.7.1+cu128 get_arch_list() has sm_120"),
    ("v100-2.11-cu128", MEASURED_H100, [V100, torch("2.11.0+cu128", "12.8"), driver("570.124.06", "12.8")], UNSUPPORTED, "pytorch#182250: 2.11.0+cu128 has no sm_70"),
    ("v100-2.10-cu128", MEASURED_H100, [V100, torch("2.10.0+cu128", "12.8"), driver("570.124.06", "12.8")], NO_ARCH, "pytorch#182250: 2.10.0+cu128 has sm_70"),
    ("v100-2.13-cu130", MEASURED_H100, [V100, torch("2.13.0+cu130", "13.0")], UNSUPPORTED, "CODE_CC 13.0 x86_64 starts at 75"),
    ("gtx1080-2.13-cu126", MEASURED_H100, [gpu("NVIDIA GeForce GTX 1080", "6.1"), torch("2.13.0+cu126", "12.6")], NO_ARCH, "CODE_CC 12.6 has 60; DEVICE_REQUIREMENT 60 runs 6.1"),
    ("rtx4090-2.13-cu130", MEASURED_H100, [gpu("NVIDIA GeForce RTX 4090", "8.9"), torch("2.13.0+cu130", "13.0")], NO_ARCH, "DEVICE_REQUIREMENT 86 runs 8.9"),
    ("gb10-2.13-cu130", MEASURED_H100, [gpu("NVIDIA GB10", "12.1"), torch("2.13.0+cu130", "13.0")], NO_ARCH, "DEVICE_REQUIREMENT 120 runs 12.1"),
    ("b200-2.13-cu126", MEASURED_H100, [B200, torch("2.13.0+cu126", "12.6")], UNSUPPORTED, "CODE_CC 12.6 ends at 90"),
    ("b200-2.13-cu130", MEASURED_H100, [B200, torch("2.13.0+cu130", "13.0")], NO_ARCH, "CODE_CC 13.0 has 100"),
    ("k80-2.7.1-cu118", MEASURED_H100, [gpu("Tesla K80", "3.7"), torch("2.7.1+cu118", "11.8"), driver("535.104.05", "12.2")], NO_ARCH, "cu118 keeps sm_37 up to 2.7 (build_cuda.sh)"),
    ("k80-2.8-cu126", MEASURED_H100, [gpu("Tesla K80", "3.7"), torch("2.8.0+cu126", "12.6"), driver("535.104.05", "12.2")], UNSUPPORTED, "cu126 starts at 50"),
    ("thor-aarch64-2.13-cu130", MEASURED_H100, [machine("aarch64"), gpu("NVIDIA Thor", "11.0"), torch("2.13.0+cu130", "13.0")], NO_ARCH, "CODE_CC 13.0 aarch64 has 110"),
    ("orin-aarch64-2.13-cu130", MEASURED_H100, [machine("aarch64"), gpu("Orin (nvgpu)", "8.7"), torch("2.13.0+cu130", "13.0")], UNSUPPORTED, "DEVICE_REQUIREMENT 80 excludes 87"),
    ("gh200-aarch64-2.13-cu126", MEASURED_H100, [machine("aarch64"), torch("2.13.0+cu126", "12.6")], NO_ARCH, "CODE_CC 12.6 aarch64 is {80, 90}"),
    ("v100-aarch64-2.13-cu126", MEASURED_H100, [machine("aarch64"), V100, torch("2.13.0+cu126", "12.6")], UNSUPPORTED, "CODE_CC 12.6 aarch64 is {80, 90}"),
    ("h100-cu130-driver-535", MEASURED_H100, [driver("535.104.05", "12.2")], {"cuda.driver-too-old": "error"}, "CUDA 13.0 needs driver 580 (release notes)"),
    ("h100-2.11-cu128-driver-535", MEASURED_H100, [torch("2.11.0+cu128", "12.8"), driver("535.104.05", "12.2")], {"cuda.driver-too-old": None}, "CUDA 12.x minor-version compatibility from 525"),
    ("h100-probed", PROBED_H100, [], {**NO_ARCH, "cuda.driver-too-old": None}, "the probe passed CUDA matmul on this H100"),
    ("h100-probed-driver-535", PROBED_H100, [driver("535.104.05", "12.2")], {"cuda.driver-too-old": "warning"}, "the probe ran CUDA with this torch: a table's fear, disproved"),
    ("h100-2.11-cu130-fatbin", MEASURED_H100, [kernels_read(H100_ARCH_LIST)], NO_ARCH, "libtorch_cuda.so of the PyPI wheel: cubins 75-120, no PTX"),
    ("numpy2-scipy-1.11", MEASURED_H100, [only_numpy_stack, installed("scipy", "1.11.4", "numpy<1.28.0,>=1.21.6")], {"numpy.abi-mismatch": "error", "numpy.too-old": None}, "SciPy 1.13.0 is the first built for NumPy 2"),
    ("numpy2-sklearn-1.5", MEASURED_H100, [only_numpy_stack, installed("scikit-learn", "1.5.0", "numpy>=1.19.5")], {"numpy.abi-mismatch": None}, "scikit-learn 1.4.2 is the first built for NumPy 2"),
    ("numpy2-torch-2.2", MEASURED_H100, [only_numpy_stack, torch("2.2.2+cu121", "12.1"), driver("535.104.05", "12.2")], {"numpy.abi-mismatch": "error"}, "torch 2.3 is the first built against NumPy 2 (pytorch#107302)"),
    ("numpy1-opencv-4.12", MEASURED_H100, [only_numpy_stack, installed("numpy", "1.26.4"), installed("opencv-python-headless", "4.12.0.88", 'numpy<2.3.0,>=2; python_version >= "3.9"')], {"numpy.too-old": "warning", "numpy.abi-mismatch": None}, "opencv-python 4.12.0.88 requires numpy>=2 (opencv-python#1122)"),
    ("numpy1-scipy-1.11", MEASURED_H100, [only_numpy_stack, installed("numpy", "1.26.4"), installed("scipy", "1.11.4", "numpy<1.28.0,>=1.21.6")], {"numpy.too-old": None, "numpy.abi-mismatch": None}, "SciPy 1.11 runs on NumPy 1.26"),
]


def edited(base: Path, changes: List[Change], folder: Path) -> Path:
    report = json.loads(base.read_text(encoding="utf-8"))
    for change in changes:
        change(report["facts"])
    path = folder / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


@pytest.mark.parametrize("base, changes, expected", [pytest.param(b, c, e, id=i) for i, b, c, e, _ in CASES])
def test_each_combination_is_judged_as_its_sources_say(judged, tmp_path, base, changes, expected: Dict[str, Optional[str]]):
    found = findings_by_id(judged(edited(base, changes, tmp_path), only="cuda,doctor,numpy"))
    verdicts = {check: [f["severity"] for f in found.get(check, [])] for check in expected}
    assert verdicts == {check: ([severity] if severity else []) for check, severity in expected.items()}


def test_the_set_is_as_large_as_it_says():
    assert len(CASES) == 27 and len({case[0] for case in CASES}) == len(CASES)


def messy(facts):
    """One plain venv, five causes: three CUDA wheel families, NumPy 2 under three packages built for 1.x,
    a CUDA 11 runtime on LD_LIBRARY_PATH (another soname: not a cause), OMP_NUM_THREADS=0, a hidden GPU."""
    for change in (
        installed("nvidia-cudnn-cu11", "8.5.0.96"), installed("nvidia-cublas-cu12", "12.1.3.1"),
        installed("scipy", "1.11.4", "numpy<1.28.0,>=1.21.6"), installed("Bottleneck", "1.3.7", "numpy"), installed("pandas", "2.2.0", "numpy<2,>=1.26.0"),
    ):
        change(facts)
    facts["environ"]["variables"].update(OMP_NUM_THREADS="0", CUDA_VISIBLE_DEVICES="")
    facts["libraries"]["ld_library_path"] = [
        {"via": "LD_LIBRARY_PATH", "path": "/usr/local/cuda-11.8/lib64/libcudart.so.11.0", "library": "libcudart", "major": 11, "version": "11.8.89"},
    ]


def test_a_messy_venv_gives_one_finding_per_cause(judged, tmp_path):
    found = findings_by_id(judged(edited(MEASURED_H100, [messy], tmp_path), only="cuda,wheels,conda,numpy,requirements,threads,gpu", skipped="threads.multiple-openmp"))
    causes = {check: [f["severity"] for f in found.get(check, [])] for check in (
        "wheels.mixed-cuda-families", "conda.mixed-cuda", "numpy.abi-mismatch", "threads.oversubscribed", "gpu.devices-hidden",
    )}
    assert causes == {
        "wheels.mixed-cuda-families": ["warning"], "conda.mixed-cuda": [], "numpy.abi-mismatch": ["error"],
        "threads.oversubscribed": ["warning"], "gpu.devices-hidden": ["warning"],
    }
    # the recorded venv's jax wants a newer scipy than the one put in: another cause, said apart; numpy's is not said again
    unmet = [u["requirement"] for f in found.get("requirements.unsatisfied", []) for u in f["evidence"]["unsatisfied"]]
    assert unmet and all(u.startswith("scipy") for u in unmet)
    [numpy] = found["numpy.abi-mismatch"]
    assert [line.split(" (")[0] for line in numpy["evidence"]["needs_numpy_1"]] == ["Bottleneck 1.3.7", "pandas 2.2.0", "scipy 1.11.4"]
    assert not [e for e in found.get("cuda.library-shadowing", []) if "libcudart" in str(e["evidence"])]
