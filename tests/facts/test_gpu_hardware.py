"""On a machine with a real NVIDIA GPU: NVML facts agree with nvidia-smi, a consistent CUDA stack raises
no error, and the probe reaches the CUDA matmul. Marked `gpu`; elsewhere each test says it was skipped
because there is no driver (pytest -ra lists the reason), never silently."""

import shutil
import subprocess

import pytest


pytestmark = pytest.mark.gpu
NVIDIA_SMI_FIELDS = "driver_version,name,compute_cap,memory.total"


@pytest.fixture(scope="module")
def smi_gpus():
    """nvidia-smi's own view of the GPUs, the reference NVML facts are held against."""
    if not shutil.which("nvidia-smi"):
        pytest.skip("no NVIDIA driver here: run `pytest -m gpu` on a GPU machine")
    out = subprocess.run(["nvidia-smi", f"--query-gpu={NVIDIA_SMI_FIELDS}", "--format=csv,noheader,nounits"], capture_output=True, text=True, check=True).stdout
    return [dict(zip(NVIDIA_SMI_FIELDS.split(","), (v.strip() for v in line.split(",")))) for line in out.strip().splitlines()]


def test_nvml_facts_agree_with_nvidia_smi(envdoctor, smi_gpus):
    gpu = envdoctor("check", "--no-save", "--no-probe", "--only", "gpu", "--json", "-").json()["facts"]["gpu"]
    assert gpu["source"] == "nvml"
    assert gpu["driver"]["version"] == smi_gpus[0]["driver_version"]
    assert [g["name"] for g in gpu["gpus"]] == [s["name"] for s in smi_gpus]
    assert [g["compute_capability"] for g in gpu["gpus"]] == [s["compute_cap"] for s in smi_gpus]
    assert [g["memory_total_bytes"] // 2**20 for g in gpu["gpus"]] == [int(s["memory.total"]) for s in smi_gpus]


def test_a_working_cuda_stack_has_no_cuda_errors(envdoctor, smi_gpus):
    report = envdoctor("check", "--no-save", "--no-probe", "--only", "cuda,wheels,gpu", "--json", "-").json()
    build = report["facts"]["target"]["torch_build"]
    if not build or not build.get("cuda"):
        pytest.skip("the interpreter running the tests has no CUDA build of torch")
    errors = [f["id"] for f in report["findings"] if f["severity"] == "error"]
    assert errors == []


def test_the_probe_runs_a_cuda_matmul(envdoctor, smi_gpus):
    probe = envdoctor("check", "--no-save", "--only", "probe", "--json", "-").json()["probe"]
    stages = {s["id"]: s for s in probe["stages"]}
    if stages["cuda_init"]["status"] == "skipped":
        pytest.skip(f"CUDA stages skipped: {stages['cuda_init']['reason']}")
    assert stages["cuda_init"]["details"]["capability"] == smi_gpus[0]["compute_cap"]
    assert stages["cuda_init"]["details"]["kernels_for_device"] is True
    assert stages["cuda_matmul"]["status"] == "passed"


def test_the_kernels_read_from_torchs_libraries_are_its_arch_list(envdoctor, smi_gpus):
    """The fatbin reader against torch itself: the same arch list, and no knowledge-stale on a standard install."""
    report = envdoctor("check", "--no-save", "--only", "cuda,doctor,probe", "--json", "-").json()
    kernels = report["facts"]["target"].get("torch_kernels")
    stages = {s["id"]: s for s in (report["probe"] or {}).get("stages", ())}
    recorded = (stages.get("cuda_init") or {}).get("details", {}).get("arch_list")
    if not kernels or recorded is None:
        pytest.skip("the interpreter running the tests has no CUDA build of torch, or the probe did not reach CUDA")
    assert kernels["arch_list"] == recorded
    assert "doctor.knowledge-stale" not in {f["id"] for f in report["findings"]}
