"""GPU facts (NVML child, nvidia-smi fallback, the no-driver fact) and gpu.memory-low, through the CLI
with recorded facts from real machines (tests/data/gpu) and real child processes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from conftest import TEST_DATA, assert_checks_ran, changed_report, findings_by_id, run_envdoctor, write_host_root
from envdoctor.collect import CollectContext, gpu
from envdoctor.collect.nvml_query import decode_cuda_version

DATA = TEST_DATA / "gpu"
H100 = DATA / "h100-driver580-cu130.json"


def collect_gpu(tmp_path, files, path_dirs=()):
    """The gpu collector's facts with the host files `files` and only `path_dirs` on PATH."""
    env = {"ENVDOCTOR_ROOT": str(write_host_root(tmp_path / "root", files)), "PATH": os.pathsep.join(map(str, path_dirs))}
    report = run_check(tmp_path, env)
    return report["facts"]["gpu"]


def run_check(tmp_path, env):
    run = run_envdoctor("check", "--no-save", "--no-probe", "--only", "gpu,cuda", "--json", "-", env=env, cwd=tmp_path)
    assert run.returncode in (0, 1), run
    return run.json()


def fake_nvidia_smi(folder: Path) -> Path:
    """An nvidia-smi that answers with the output recorded on an H100 with driver 580.159.04."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        f'case "$1" in --query-gpu=*) cat "{DATA / "nvidia-smi" / "query.csv"}";; *) cat "{DATA / "nvidia-smi" / "header.txt"}";; esac\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


@pytest.mark.parametrize("encoded, version", [(13000, "13.0"), (12040, "12.4"), (11040, "11.4"), (9020, "9.2"), (0, None)])
def test_nvml_cuda_driver_version_is_decoded(encoded, version):
    assert decode_cuda_version(encoded) == version


def test_no_driver_is_a_clean_fact_without_any_child_process(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVDOCTOR_ROOT", str(write_host_root(tmp_path / "root", {"/proc/": ""})))
    monkeypatch.setattr(gpu, "run_child", lambda *a, **k: pytest.fail("a child process was started without a driver"))
    facts = gpu.collect(CollectContext(python="python", environ={}))
    assert facts == {"source": "none", "driver": None, "gpus": [], "reason": facts["reason"]}
    assert "no NVIDIA driver" in facts["reason"]


def test_no_driver_through_the_cli_leaves_the_gpu_checks_not_checked(tmp_path):
    report = run_check(tmp_path, {"ENVDOCTOR_ROOT": str(write_host_root(tmp_path / "root", {"/proc/": ""}))})
    assert report["facts"]["gpu"]["source"] == "none"
    runs = {c["id"]: c for c in report["checks"]}
    assert (runs["gpu.memory-low"]["status"], runs["gpu.memory-low"]["reason"]) == ("skipped", "no NVIDIA GPU was found")
    assert runs["cuda.driver-too-old"]["status"] == "passed"


def test_driver_files_without_nvml_or_nvidia_smi_say_why(tmp_path):
    facts = collect_gpu(tmp_path, {"/dev/nvidiactl": "", "/proc/driver/nvidia/version": "NVRM version: 580.159.04\n"})
    assert facts["source"] == "none"
    assert "ENVDOCTOR_ROOT" in facts["reason"] and "nvidia-smi not found" in facts["reason"]


def test_nvml_child_answers_or_says_why():
    """The real NVML query in a child: the facts on a GPU machine, a reason on one without a driver."""
    answer = gpu.query_nvml()
    if "reason" in answer:
        assert not gpu.driver_present() or answer["reason"].startswith("NVML query")
        assert "NVMLError" in answer["reason"] or "timed out" in answer["reason"]
    else:
        assert answer["source"] == "nvml" and answer["driver"]["version"]
        assert all(g["compute_capability"] and g["memory_total_bytes"] > 0 for g in answer["gpus"])


def test_nvidia_smi_answers_when_nvml_cannot(tmp_path):
    facts = collect_gpu(tmp_path, {"/dev/nvidiactl": ""}, [fake_nvidia_smi(tmp_path / "bin"), "/usr/bin", "/bin"])
    assert facts["source"] == "nvidia-smi"
    assert facts["driver"] == {"version": "580.159.04", "cuda": "13.0"}
    assert facts["gpus"] == [{
        "index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
        "memory_total_bytes": 81559 * 2 ** 20, "memory_used_bytes": 0, "memory_free_bytes": 81079 * 2 ** 20, "mig_mode": "disabled",
    }]
    assert "NVML" in facts["nvml_failure"]


def test_wsl_projected_nvidia_smi_is_found(tmp_path):
    root = write_host_root(tmp_path / "root", {"/usr/lib/wsl/lib/libnvidia-ml.so.1": ""})
    fake_nvidia_smi(root / "usr" / "lib" / "wsl" / "lib")
    report = run_check(tmp_path, {"ENVDOCTOR_ROOT": str(root), "PATH": "/usr/bin:/bin"})
    assert report["facts"]["gpu"]["source"] == "nvidia-smi"


def test_recorded_h100_with_driver_580_and_cu130_torch_has_no_error(envdoctor):
    run = envdoctor("check", "--from", str(H100), "--json", "-")
    assert run.returncode == 0, run
    report = run.json()
    assert report["facts"]["gpu"]["driver"] == {"version": "580.159.04", "cuda": "13.0"}
    assert report["facts"]["gpu"]["gpus"][0]["compute_capability"] == "9.0"
    assert not [f for f in report["findings"] if f["severity"] == "error"]
    assert_checks_ran(report, ran=())
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    for passed in ("cuda.driver-too-old", "cuda.gpu-arch-unsupported", "wheels.mixed-cuda-families", "wheels.torch-pins", "gpu.memory-low"):
        assert statuses[passed] == "passed", passed


def test_gpu_with_95_percent_of_memory_used_is_a_warning(envdoctor):
    run = envdoctor("check", "--from", str(DATA / "memory95.json"), "--only", "gpu", "--json", "-")
    assert_checks_ran(run.json(), "gpu")
    found = findings_by_id(run.json())["gpu.memory-low"]
    assert [f["severity"] for f in found] == ["warning"]
    assert "95%" in found[0]["title"] and "A100" in found[0]["title"]
    assert found[0]["remedies"][1] == {"summary": "Stop them; no other GPU here has room to move the run to.", "command": None}
    assert run.returncode == 0


def test_a_busy_gpu_points_to_the_freest_other_one(judged, tmp_path):
    def four_gpus(facts):
        busy = facts["gpu"]["gpus"][0]
        used = {0: 0.95, 1: 0.92, 2: 0.40, 3: 0.10}
        facts["gpu"]["gpus"] = [
            {**busy, "index": i, "memory_used_bytes": int(busy["memory_total_bytes"] * u), "memory_free_bytes": int(busy["memory_total_bytes"] * (1 - u))}
            for i, u in used.items()
        ]

    found = findings_by_id(judged(changed_report(DATA / "memory95.json", tmp_path / "r.json", four_gpus), only="gpu"))["gpu.memory-low"]
    assert [f["title"].split(" (")[0] for f in found] == ["GPU 0", "GPU 1"]
    assert {f["remedies"][1]["command"] for f in found} == {"CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=3 python train.py"}


def test_h100_idle_memory_is_not_flagged(judged):
    assert "gpu.memory-low" not in findings_by_id(judged(H100, only="gpu"))


def visible_devices(value):
    def change(facts):
        facts["environ"]["variables"]["CUDA_VISIBLE_DEVICES"] = value
    return change


@pytest.mark.parametrize("value, hidden", [("", True), ("-1", True), ("NoDevFiles", True), ("1", True), ("0", False), ("0,1", False), ("GPU-8d0f3c1e", False)])
def test_cuda_visible_devices_that_hide_every_gpu(judged, tmp_path, value, hidden):
    found = findings_by_id(judged(changed_report(H100, tmp_path / "r.json", visible_devices(value)), only="gpu"))
    assert ("gpu.devices-hidden" in found) is hidden
    if hidden:
        [finding] = found["gpu.devices-hidden"]
        assert finding["severity"] == "warning" and finding["evidence"]["CUDA_VISIBLE_DEVICES"] == value
        assert [r["command"] for r in finding["remedies"]] == ["unset CUDA_VISIBLE_DEVICES", "export CUDA_VISIBLE_DEVICES=0"]


def test_an_empty_cuda_visible_devices_without_a_gpu_is_nothing(judged, tmp_path):
    def no_gpu(facts):
        visible_devices("")(facts)
        facts["gpu"] = {"source": "none", "driver": None, "gpus": [], "reason": "no NVIDIA driver"}

    report = judged(changed_report(H100, tmp_path / "r.json", no_gpu), only="gpu", skipped="gpu")
    assert "gpu.devices-hidden" not in findings_by_id(report)
