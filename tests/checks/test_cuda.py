"""CUDA checks: the driver, GPU architecture and CPU-build verdicts from recorded facts
(tests/data/gpu), and library shadowing and nvcc from real files, real wheels and real child processes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from conftest import REPO, TEST_DATA, changed_report, findings_by_id, write_host_root

DATA = TEST_DATA / "gpu"
H100 = DATA / "h100-driver580-cu130.json"
PYTHON = "/opt/torch/.venv/bin/python"  # the recorded H100 environment's interpreter


def findings(judged, report: Path, only: str = "cuda", skipped=()) -> dict:
    return findings_by_id(judged(report, only=only, skipped=skipped))


def commands(finding: dict) -> list:
    return [r["command"] for r in finding["remedies"] if r["command"]]


def test_driver_470_cannot_run_a_cu121_torch(judged):
    [finding] = findings(judged, DATA / "driver470-cu121.json")["cuda.driver-too-old"]
    assert finding["severity"] == "error"
    assert finding["evidence"]["minimum_driver"] == "525.60.13"
    assert "470.82.01" in finding["title"] and "525.60.13" in finding["title"]
    assert "up to 11.4" in finding["explanation"] and "530.30.02" in finding["explanation"]
    assert commands(finding) == [
        "/home/user/venv/bin/python -m pip uninstall -y nvidia-cublas-cu12 nvidia-cuda-cupti-cu12 nvidia-cuda-nvrtc-cu12 "
        "nvidia-cuda-runtime-cu12 nvidia-cudnn-cu12 nvidia-cufft-cu12 nvidia-curand-cu12 nvidia-cusolver-cu12 "
        "nvidia-cusparse-cu12 nvidia-nccl-cu12 nvidia-nvtx-cu12",
        "/home/user/venv/bin/python -m pip install torch==2.1.2+cu118 torchvision==0.16.2+cu118 --index-url https://download.pytorch.org/whl/cu118",
        "envdoctor fix --pin-cuda 11.8 --torch 2.1.2 --python /home/user/venv/bin/python",
    ]


@pytest.mark.parametrize("version, too_old", [("525.60.13", False), ("525.60.12", True), ("535.104.05", False)])
def test_minor_version_compatibility_floor(judged, tmp_path, version, too_old):
    def driver(facts):
        facts["gpu"]["driver"]["version"] = version

    found = findings(judged, changed_report(DATA / "driver470-cu121.json", tmp_path / "r.json", driver))
    assert ("cuda.driver-too-old" in found) is too_old


def test_blackwell_on_cu126_points_to_the_first_release_with_its_kernels(judged):
    [finding] = findings(judged, DATA / "sm120-cu126.json")["cuda.gpu-arch-unsupported"]
    assert finding["severity"] == "error"
    assert "sm_120" in finding["title"] and "cu126" in finding["title"]
    assert "cu128, cu129, cu130, cu132" in finding["explanation"]
    assert commands(finding) == [
        "/home/user/venv/bin/python -m pip install torch==2.7.1+cu128 torchvision==0.22.1+cu128 --index-url https://download.pytorch.org/whl/cu128",
        "envdoctor fix --pin-cuda 12.8 --torch 2.7.1 --python /home/user/venv/bin/python",
    ]


def test_pascal_on_cu130_goes_back_to_cu126_and_drops_the_cu13_wheels(judged, tmp_path):
    def pascal(facts):
        facts["gpu"]["gpus"][0].update(name="NVIDIA GeForce GTX 1080", compute_capability="6.1")

    [finding] = findings(judged, changed_report(H100, tmp_path / "r.json", pascal))["cuda.gpu-arch-unsupported"]
    uninstall, install, planned = commands(finding)
    assert uninstall.startswith(f"{PYTHON} -m pip uninstall -y cuda-toolkit nvidia-cublas nvidia-cuda-cupti")
    assert "nvidia-cudnn-cu13" in uninstall and "nvidia-ml-py" not in uninstall
    assert install == (
        f"{PYTHON} -m pip install torch==2.11.0+cu126 torchvision==0.26.0+cu126 torchaudio==2.11.0+cu126 "
        "--index-url https://download.pytorch.org/whl/cu126"
    )
    assert planned == f"envdoctor fix --pin-cuda 12.6 --torch 2.11.0 --python {PYTHON}"


def test_cpu_torch_on_a_gpu_host(judged, tmp_path):
    def cpu_build(facts):
        facts["target"]["torch_build"].update(version="2.11.0+cpu", cuda=None)

    [finding] = findings(judged, changed_report(H100, tmp_path / "r.json", cpu_build))["cuda.cpu-build-on-gpu-host"]
    assert finding["severity"] == "warning" and "H100" in finding["title"]
    assert commands(finding) == [
        f"{PYTHON} -m pip install torch==2.11.0+cu130 torchvision==0.26.0+cu130 torchaudio==2.11.0+cu130 "
        "--index-url https://download.pytorch.org/whl/cu130",
        f"envdoctor fix --pin-cuda 13.0 --torch 2.11.0 --python {PYTHON}",
    ]


def test_cpu_torch_without_a_gpu_is_fine(judged, tmp_path):
    def cpu_box(facts):
        facts["target"]["torch_build"].update(version="2.11.0+cpu", cuda=None)
        facts["gpu"] = {"source": "none", "driver": None, "gpus": [], "reason": "no NVIDIA driver"}

    assert "cuda.cpu-build-on-gpu-host" not in findings(judged, changed_report(H100, tmp_path / "r.json", cpu_box))


def test_system_cudnn_in_the_linker_cache_beside_the_wheel_recorded_on_h100(judged):
    [finding] = findings(judged, H100)["cuda.library-shadowing"]
    assert finding["severity"] == "info"  # torch loaded only the wheel's cuDNN on that machine
    assert {e["version"] for e in finding["evidence"]["libraries"]} == {"9.14.0"}
    assert commands(finding)[0].startswith("dpkg -S /lib/x86_64-linux-gnu/libcudnn.so.9 ")


def system_cudart(folder: Path, version: str) -> Path:
    """A CUDA runtime as a toolkit installs it: the real file, and its soname link."""
    folder.mkdir(parents=True)
    (folder / f"libcudart.so.{version}").write_bytes(b"\x7fELF")
    os.symlink(f"libcudart.so.{version}", folder / f"libcudart.so.{version.split('.')[0]}")
    return folder


@pytest.fixture(scope="module")
def cudart_venv(venvs):
    return venvs.get("cuda-runtime-cu12", ["nvidia-cuda-runtime-cu12"])


def check_libraries(envdoctor, python, **env) -> dict:
    run = envdoctor("check", "--python", str(python), "--no-save", "--no-probe", "--only", "cuda", "--json", "-", env=env, unset=("LD_PRELOAD",))
    assert run.returncode in (0, 1), run
    return run.json()


@pytest.mark.slow
def test_ld_library_path_copies_ahead_of_the_wheel(envdoctor, tmp_path, cudart_venv):
    same_major = system_cudart(tmp_path / "cuda-12.1" / "lib64", "12.1.105")
    other_major = system_cudart(tmp_path / "cuda-11.8" / "lib64", "11.8.89")
    report = check_libraries(envdoctor, cudart_venv, LD_LIBRARY_PATH=f"{same_major}:/opt/keep:{other_major}")
    [finding] = findings_by_id(report)["cuda.library-shadowing"]
    assert finding["severity"] == "warning"  # no CUDA torch here: only another package could load the copy
    libraries = {(e["major"], e["version"], e["severity"]) for e in finding["evidence"]["libraries"]}
    assert libraries == {(12, "12.1.105", "error")}  # libcudart.so.11.0 cannot stand in for libcudart.so.12
    assert commands(finding) == [f"export LD_LIBRARY_PATH=/opt/keep:{other_major}"]


@pytest.mark.slow
def test_ld_preload_of_a_cuda_library_is_an_error(envdoctor, tmp_path, cudart_venv):
    folder = system_cudart(tmp_path / "lib", "12.9.79")
    report = check_libraries(envdoctor, cudart_venv, LD_PRELOAD=str(folder / "libcudart.so.12"))
    [finding] = findings_by_id(report)["cuda.library-shadowing"]
    assert finding["evidence"]["libraries"][0]["severity"] == "error" and commands(finding) == ["unset LD_PRELOAD"]
    assert finding["severity"] == "warning" and "no CUDA build" in finding["explanation"]


def loader_finds(*entries):
    def change(facts):
        sections = {"LD_PRELOAD": "ld_preload", "LD_LIBRARY_PATH": "ld_library_path", "ldconfig": "ldconfig"}
        for name in sections.values():
            facts["libraries"][name] = []
        for via, path, version in entries:
            library = path.rsplit("/", 1)[1].split(".so")[0]
            facts["libraries"][sections[via]].append({"via": via, "path": path, "library": library, "major": int(version.split(".")[0]), "version": version})
    return change


@pytest.mark.parametrize("entries, severity", [
    ([("LD_PRELOAD", "/opt/cuda/lib64/libcudart.so.13", "13.0.48")], "error"),
    ([("LD_LIBRARY_PATH", "/usr/local/cuda-13.1/lib64/libcudart.so.13", "13.1.80")], "error"),
    ([("LD_LIBRARY_PATH", "/usr/local/cuda-12.4/lib64/libcudart.so.12", "12.4.127")], None),  # another soname
    ([("LD_PRELOAD", "/usr/local/cuda-12.4/lib64/libcudart.so.12", "12.4.127")], "warning"),
])
def test_library_shadowing_follows_the_soname(judged, tmp_path, entries, severity):
    found = findings(judged, changed_report(H100, tmp_path / "r.json", loader_finds(*entries)))
    assert (found["cuda.library-shadowing"][0]["severity"] if "cuda.library-shadowing" in found else None) == severity


@pytest.mark.slow
def test_matching_copy_in_ld_library_path_is_not_flagged(envdoctor, tmp_path, cudart_venv):
    report = check_libraries(envdoctor, cudart_venv, LD_LIBRARY_PATH="")
    wheel = next(d for d in report["facts"]["target"]["distributions"] if d["name"] == "nvidia-cuda-runtime-cu12")
    folder = system_cudart(tmp_path / "same", wheel["version"])
    report = check_libraries(envdoctor, cudart_venv, LD_LIBRARY_PATH=str(folder))
    assert report["facts"]["libraries"]["ld_library_path"][0]["version"] == wheel["version"]
    assert "cuda.library-shadowing" not in findings_by_id(report)


def test_linker_cache_is_read_from_the_binary_cache(envdoctor, tmp_path):
    cache = b"glibc-ld.so.cache1.1\x00" + b"\x00".join(
        [b"libcudnn.so.8", b"/usr/lib/x86_64-linux-gnu/libcudnn.so.8", b"libz.so.1", b"/lib/x86_64-linux-gnu/libz.so.1"]
    ) + b"\x00"
    root = write_host_root(tmp_path / "root", {"/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.2": "", "/etc/": ""})
    (root / "etc" / "ld.so.cache").write_bytes(cache)
    os.symlink("libcudnn.so.8.9.2", root / "usr" / "lib" / "x86_64-linux-gnu" / "libcudnn.so.8")
    run = envdoctor("check", "--no-save", "--no-probe", "--only", "cuda", "--json", "-", env={"ENVDOCTOR_ROOT": str(root)})
    assert run.json()["facts"]["libraries"]["ldconfig"] == [
        {"via": "ldconfig", "path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "library": "libcudnn", "major": 8, "version": "8.9.2"}
    ]


def fake_nvcc(folder: Path, release: str) -> Path:
    folder.mkdir(parents=True)
    script = folder / "nvcc"
    script.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{release}.131'\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def test_nvcc_on_path_is_recorded(envdoctor, tmp_path):
    path = f"{fake_nvcc(tmp_path / 'cuda-12.4' / 'bin', '12.4')}:/usr/bin:/bin"
    run = envdoctor("check", "--no-save", "--no-probe", "--only", "cuda", "--json", "-", env={"PATH": path})
    assert run.json()["facts"]["libraries"]["nvcc"] == {
        "path": str(tmp_path / "cuda-12.4" / "bin" / "nvcc"), "version": "12.4", "full_version": "12.4.131", "error": None,
    }


def test_nvcc_of_another_cuda_than_torch_is_info(judged, tmp_path):
    def nvcc(facts):
        facts["libraries"]["nvcc"] = {"path": "/usr/local/cuda-12.4/bin/nvcc", "version": "12.4", "full_version": "12.4.131", "error": None}

    [finding] = findings(judged, changed_report(H100, tmp_path / "r.json", nvcc))["cuda.nvcc-mismatch"]
    assert finding["severity"] == "info"
    assert "another major version" in finding["explanation"]
    assert commands(finding) == ["export CUDA_HOME=/usr/local/cuda-13.0"]
    assert "cuda.nvcc-mismatch" not in findings(judged, H100)


SAMPLE = REPO / "reports" / "samples" / "h100-cu130.json"  # measured, with its probe
H100_ARCHES = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]  # what 2.11.0+cu130 from PyPI reported there
CU128_210 = ["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
SAMPLE_PYTHON = "/opt/torch/.venv/bin/python3"


def volta(facts):
    facts["gpu"]["gpus"][0].update(name="Tesla V100-SXM2-16GB", compute_capability="7.0")


def pascal(facts):
    facts["gpu"]["gpus"][0].update(name="NVIDIA GeForce GTX 1080", compute_capability="6.1")


def torch_as(version: str, cuda: str, requires=None):
    """A change of the recorded facts to another torch build: version.py and the distribution's metadata."""

    def change(facts):
        facts["target"]["torch_build"].update(version=version, cuda=cuda)
        dist = next(d for d in facts["target"]["distributions"] if d["name"] == "torch")
        dist["version"] = version.split("+")[0]
        if requires is not None:
            dist["requires"] = requires

    return change


def probed_report(tmp_path: Path, changes, arch_list=None, probe_torch=None) -> Path:
    """The measured H100 report (facts and probe) with `changes` applied to its facts and, when given,
    the probe's recorded torch version and torch.cuda.get_arch_list() replaced; no probe when arch_list is None."""
    report = json.loads(SAMPLE.read_text(encoding="utf-8"))
    for change in changes:
        change(report["facts"])
    if arch_list is None:
        report["probe"] = None
    else:
        stages = {s["id"]: s for s in report["probe"]["stages"]}
        stages["import_torch"]["details"]["version"] = probe_torch or report["facts"]["target"]["torch_build"]["version"]
        stages["cuda_init"]["details"]["arch_list"] = arch_list
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def with_doctor(judged, report: Path, skipped=()) -> dict:
    return findings(judged, report, only="cuda,doctor", skipped=skipped)


def test_v100_on_torch_2_11_cu128_has_no_kernels(judged, tmp_path):
    found = with_doctor(judged, changed_report(H100, tmp_path / "r.json", lambda f: (volta(f), torch_as("2.11.0+cu128", "12.8")(f))))
    [finding] = found["cuda.gpu-arch-unsupported"]
    assert "sm_70" in finding["title"] and "2.11.0+cu128" in finding["title"]
    assert finding["evidence"]["arch_list_source"].startswith("Volta dropped") and "7.0" not in finding["evidence"]["shipped"]
    assert commands(finding)[-2].startswith(f"{PYTHON} -m pip install torch==2.11.0+cu126 ")
    assert "doctor.knowledge-stale" not in found


def test_v100_on_torch_2_10_cu128_is_fine(judged, tmp_path):
    found = with_doctor(judged, changed_report(H100, tmp_path / "r.json", lambda f: (volta(f), torch_as("2.10.0+cu128", "12.8")(f))))
    assert "cuda.gpu-arch-unsupported" not in found


def test_the_measured_probe_agrees_with_the_cu130_row(judged):
    found = with_doctor(judged, SAMPLE)
    assert "doctor.knowledge-stale" not in found and "cuda.gpu-arch-unsupported" not in found


def test_a_cu130_row_that_still_claimed_ptx_would_be_named_stale(judged, tmp_path):
    found = with_doctor(judged, probed_report(tmp_path, [], arch_list=H100_ARCHES + ["compute_120"]))
    [stale] = found["doctor.knowledge-stale"]
    assert "cu130 (x86_64) for torch 2.11–2.14" in stale["title"] and "2.11.0+cu130" in stale["title"]
    assert stale["evidence"]["table"] == H100_ARCHES and stale["evidence"]["recorded"] == H100_ARCHES + ["compute_120"]


def rtx_5090(facts):
    facts["gpu"]["gpus"][0].update(name="NVIDIA GeForce RTX 5090", compute_capability="12.0")


def test_an_rtx_5090_on_torch_2_5_1_cu124_has_no_kernels(judged, tmp_path):
    found = with_doctor(judged, changed_report(H100, tmp_path / "r.json", lambda f: (rtx_5090(f), torch_as("2.5.1+cu124", "12.4")(f))))
    [finding] = found["cuda.gpu-arch-unsupported"]
    assert finding["evidence"]["ptx"] == [] and "sm_120" in finding["title"]
    assert "cu128" in finding["explanation"]


def on_machine(machine):
    def change(facts):
        facts["target"]["python"]["machine"] = machine
    return change


def jetson(name, capability):
    def change(facts):
        facts["gpu"]["gpus"][0].update(name=name, compute_capability=capability)
    return change


@pytest.mark.parametrize("machine, torch, cuda, gpu, capability, runs", [
    ("aarch64", "2.13.0+cu130", "13.0", "NVIDIA Thor", "11.0", True),  # aarch64 cu130 has sm_110
    ("x86_64", "2.13.0+cu130", "13.0", "NVIDIA Thor", "11.0", False),  # the x86_64 list has no 11.x
    ("aarch64", "2.13.0+cu130", "13.0", "Orin (nvgpu)", "8.7", False),  # sm_80 cubins do not run on a Tegra 8.7
    ("aarch64", "2.13.0+cu130", "13.0", "NVIDIA GH200 480GB", "9.0", True),
    ("aarch64", "2.13.0+cu126", "12.6", "Tesla V100-SXM2-16GB", "7.0", False),  # aarch64 cu126 is 8.0 and 9.0 only
    ("x86_64", "2.13.0+cu126", "12.6", "Tesla V100-SXM2-16GB", "7.0", True),
])
def test_arch_verdicts_follow_the_platform_and_the_tegra_rule(judged, tmp_path, machine, torch, cuda, gpu, capability, runs):
    report = changed_report(H100, tmp_path / "r.json", lambda f: (on_machine(machine)(f), jetson(gpu, capability)(f), torch_as(torch, cuda)(f)))
    found = with_doctor(judged, report)
    assert ("cuda.gpu-arch-unsupported" in found) is not runs
    if not runs:
        [finding] = found["cuda.gpu-arch-unsupported"]
        assert finding["evidence"]["platform"] == machine
        assert ("Tegra" in finding["explanation"]) is (capability == "8.7")


def test_a_recorded_arch_list_judges_the_gpu_and_names_the_stale_row(judged, tmp_path):
    without_volta = [a for a in CU128_210 if a != "sm_70"]
    found = with_doctor(judged, probed_report(tmp_path, [volta, torch_as("2.10.0+cu128", "12.8")], arch_list=without_volta))
    [finding] = found["cuda.gpu-arch-unsupported"]
    assert finding["evidence"]["arch_list_source"] == "torch.cuda.get_arch_list() recorded by the probe"
    assert "as torch itself reported" in finding["explanation"]
    [stale] = found["doctor.knowledge-stale"]
    assert "cu128 (x86_64) for torch 2.8–2.10" in stale["title"] and "2.10.0+cu128" in stale["title"]
    assert stale["evidence"]["table"] == CU128_210 and stale["evidence"]["recorded"] == without_volta


def test_a_recorded_arch_list_overrules_a_table_that_says_no(judged, tmp_path):
    found = with_doctor(judged, probed_report(tmp_path, [volta, torch_as("2.11.0+cu128", "12.8")], arch_list=CU128_210))
    assert "cuda.gpu-arch-unsupported" not in found
    [stale] = found["doctor.knowledge-stale"]
    assert stale["evidence"]["recorded"] == CU128_210 and "sm_70" not in stale["evidence"]["table"]


def test_an_arch_list_recorded_for_another_torch_is_not_used(judged, tmp_path):
    report = probed_report(tmp_path, [volta, torch_as("2.11.0+cu128", "12.8")], arch_list=CU128_210, probe_torch="2.10.0+cu128")
    found = with_doctor(judged, report)
    assert found["cuda.gpu-arch-unsupported"][0]["evidence"]["arch_list_source"].startswith("Volta dropped")
    assert "doctor.knowledge-stale" not in found


@pytest.mark.parametrize("arch_list", [["sm_75", 7, None, {"a": 1}, "sm_120; reboot"], "sm_70", {"sm_70": 1}, [None]])
def test_a_malformed_recorded_arch_list_is_not_read_as_kernels(judged, tmp_path, arch_list):
    found = with_doctor(judged, probed_report(tmp_path, [volta, torch_as("2.10.0+cu128", "12.8")], arch_list=arch_list))
    assert "doctor.check-crashed" not in found
    recorded = isinstance(arch_list, list)
    assert ("cuda.gpu-arch-unsupported" in found) is recorded  # a list without sm_70 is believed; anything else is not a list
    assert ("doctor.knowledge-stale" in found) is recorded


CU13_REQUIRES = ['cuda-toolkit[cublas,cudart]==13.0.2; platform_system == "Linux"', "nvidia-cudnn-cu13==9.19.0.56", "not a requirement ==="]


def test_a_torch_newer_than_the_tables_without_a_probe_is_unknown_not_fine(judged, tmp_path):
    found = with_doctor(judged, changed_report(H100, tmp_path / "r.json", lambda f: (pascal(f), torch_as("2.99.0+cu130", "13.0", CU13_REQUIRES)(f))))
    assert "cuda.gpu-arch-unsupported" not in found  # no arch list is guessed for it
    [stale] = found["doctor.knowledge-stale"]
    assert stale["severity"] == "info" and "do not know torch 2.99.0+cu130" in stale["title"]
    assert stale["evidence"] == {
        "torch": "2.99.0+cu130", "variant": "cu130", "version_py_cuda": "13.0", "pinned_cuda_runtime": "13.0", "arch_support": "unknown",
    }
    assert "sm_61" in stale["explanation"] and "is unknown" in stale["explanation"]
    assert commands(stale) == [f"envdoctor check --python {PYTHON}"]


def test_a_torch_newer_than_the_tables_is_judged_by_its_recorded_arch_list(judged, tmp_path):
    changes = [pascal, torch_as("2.99.0+cu128", "12.8", ["nvidia-cuda-runtime-cu12==12.8.90"])]
    found = with_doctor(judged, probed_report(tmp_path, changes, arch_list=H100_ARCHES))
    [finding] = found["cuda.gpu-arch-unsupported"]
    assert finding["evidence"]["arch_list_source"] == "torch.cuda.get_arch_list() recorded by the probe"
    assert commands(finding)[-2].startswith(f"{SAMPLE_PYTHON} -m pip install torch==2.14.1+cu126 ")  # the newest known release with sm_61 kernels
    [stale] = found["doctor.knowledge-stale"]
    assert stale["evidence"]["arch_support"] == "recorded by the probe" and stale["evidence"]["pinned_cuda_runtime"] == "12.8"
    assert not stale["remedies"]


def test_a_variant_the_tables_do_not_list_is_unknown(judged, tmp_path):
    found = with_doctor(judged, changed_report(H100, tmp_path / "r.json", lambda f: (volta(f), torch_as("2.11.0+cu129", "12.9")(f))))
    assert "cuda.gpu-arch-unsupported" not in found
    [stale] = found["doctor.knowledge-stale"]
    assert "cu129" in stale["title"] and stale["evidence"]["arch_support"] == "unknown"


def read_from_libraries(flags, error=None):
    """The facts collect/fatbin.py writes for the installed torch's libraries."""
    def change(facts):
        facts["target"]["torch_kernels"] = {"files": ["/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"], "arch_list": flags, "error": error}
    return change


def test_without_the_probe_the_kernels_read_from_the_libraries_judge(judged, tmp_path):
    found = with_doctor(judged, probed_report(tmp_path, [volta, torch_as("2.10.0+cu128", "12.8"), read_from_libraries(H100_ARCHES)]))
    [finding] = found["cuda.gpu-arch-unsupported"]
    assert finding["evidence"]["arch_list_source"] == "the fatbins of torch's CUDA libraries"
    assert "as read from the fatbins" in finding["explanation"]
    [stale] = found["doctor.knowledge-stale"]
    assert stale["evidence"]["source"] == "the fatbins of torch's CUDA libraries" and stale["evidence"]["recorded"] == H100_ARCHES


def test_libraries_that_agree_with_the_row_raise_nothing(judged, tmp_path):
    found = with_doctor(judged, probed_report(tmp_path, [torch_as("2.11.0+cu130", "13.0"), read_from_libraries(H100_ARCHES)]))
    assert "doctor.knowledge-stale" not in found and "cuda.gpu-arch-unsupported" not in found


def test_the_probe_speaks_before_the_libraries_and_a_disagreement_is_said(judged, tmp_path):
    found = with_doctor(judged, probed_report(tmp_path, [volta, torch_as("2.10.0+cu128", "12.8"), read_from_libraries(H100_ARCHES)], arch_list=CU128_210))
    assert "cuda.gpu-arch-unsupported" not in found
    [disagreement] = [f for f in found["doctor.knowledge-stale"] if "read_from_libraries" in f["evidence"]]
    assert disagreement["evidence"]["recorded"] == CU128_210 and disagreement["evidence"]["read_from_libraries"] == H100_ARCHES


def test_libraries_that_could_not_be_read_leave_the_table_to_judge(judged, tmp_path):
    found = with_doctor(judged, probed_report(tmp_path, [volta, torch_as("2.11.0+cu128", "12.8"), read_from_libraries(None, "NotElf: truncated")]))
    assert found["cuda.gpu-arch-unsupported"][0]["evidence"]["arch_list_source"].startswith("Volta dropped")


def old_driver(facts):
    facts["gpu"]["driver"] = {"version": "535.104.05", "cuda": "12.2"}


def test_a_driver_verdict_the_probe_disproved_says_so_and_is_a_warning(judged, tmp_path):
    """Same cause, same facts; the probe that ran CUDA init and a CUDA matmul with this driver decides
    between 'will crash' and 'the tables fear it, the probe did not see it'."""
    [without] = with_doctor(judged, probed_report(tmp_path, [old_driver]))["cuda.driver-too-old"]
    assert without["severity"] == "error" and "disproved_by_probe" not in without["evidence"]
    [probed] = with_doctor(judged, probed_report(tmp_path, [old_driver], arch_list=H100_ARCHES))["cuda.driver-too-old"]
    assert probed["severity"] == "warning" and probed["title"] == without["title"]
    assert probed["evidence"]["disproved_by_probe"] == "the probe passed 'CUDA init + device properties', 'CUDA matmul' in this environment"
    assert "The probe disproved" in probed["explanation"]
