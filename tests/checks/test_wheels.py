"""wheels.mixed-cuda-families and wheels.torch-pins: a real venv with real NVIDIA wheels, and torch's
recorded pins (tests/data/gpu) changed the ways real environments drift."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import TEST_DATA, changed_report, findings_by_id

DATA = TEST_DATA / "gpu"
TORCH_212 = DATA / "driver470-cu121.json"
H100 = DATA / "h100-driver580-cu130.json"


def findings(judged, report: Path, skipped=()) -> dict:
    return findings_by_id(judged(report, only="wheels", skipped=skipped))


def set_version(facts: dict, name: str, version) -> None:
    """Change an installed distribution's version, or remove it with None."""
    dists = facts["target"]["distributions"]
    facts["target"]["distributions"] = [
        {**d, "version": version} if d["name"] == name else d for d in dists if not (d["name"] == name and version is None)
    ]


def add(facts: dict, name: str, version: str) -> None:
    facts["target"]["distributions"].append({"name": name, "version": version, "location": "/x", "requires": []})


@pytest.mark.slow
def test_real_venv_with_cu11_and_cu12_runtimes(envdoctor, venvs):
    python = venvs.get("cuda-families", ["nvidia-cuda-runtime-cu11", "nvidia-cuda-runtime-cu12"])
    run = envdoctor("check", "--python", str(python), "--no-save", "--no-probe", "--only", "wheels,conda", "--fail-on", "warning", "--json", "-")
    assert run.returncode == 1, run
    [finding] = findings_by_id(run.json())["wheels.mixed-cuda-families"]
    assert finding["severity"] == "warning"
    assert "conda.mixed-cuda" not in findings_by_id(run.json())  # a plain venv: one cause, one finding
    assert "nvidia-cuda-runtime-cu11==" in finding["explanation"] and "nvidia-cuda-runtime-cu12==" in finding["explanation"]
    assert set(finding["evidence"]["families"]) == {"cu11", "cu12"}
    assert [r["command"] for r in finding["remedies"]] == [
        f"{python} -m pip uninstall -y nvidia-cuda-runtime-cu12",
        f"{python} -m pip uninstall -y nvidia-cuda-runtime-cu11",
        f"envdoctor fix --mixed-wheels --python {python}",
    ]

    venvs.uninstall("cuda-families", "nvidia-cuda-runtime-cu11")
    run = envdoctor("check", "--python", str(python), "--no-save", "--no-probe", "--only", "wheels", "--json", "-")
    assert run.returncode == 0, run
    assert "wheels.mixed-cuda-families" not in findings_by_id(run.json())


def test_stray_family_beside_torch_names_what_torch_needs(judged, tmp_path):
    report = changed_report(TORCH_212, tmp_path / "r.json", lambda f: add(f, "nvidia-cudnn-cu11", "8.5.0.96"))
    [finding] = findings(judged, report)["wheels.mixed-cuda-families"]
    assert finding["evidence"]["torch_needs"] == "cu12"
    assert finding["evidence"]["families"]["cu11"] == ["nvidia-cudnn-cu11==8.5.0.96"]
    assert finding["remedies"][0]["command"] == "/home/user/venv/bin/python -m pip uninstall -y nvidia-cudnn-cu11"
    assert finding["remedies"][-1]["command"] == "envdoctor fix --mixed-wheels --python /home/user/venv/bin/python"


def test_cu13_unsuffixed_wheels_and_nvidia_ml_py_are_one_family(judged):
    assert "wheels.mixed-cuda-families" not in findings(judged, H100)


def test_torch_pins_matching_pass(judged):
    assert "wheels.torch-pins" not in findings(judged, TORCH_212)


def test_missing_and_older_pins_are_an_error_with_the_exact_install(judged, tmp_path):
    def drift(facts):
        set_version(facts, "nvidia-cudnn-cu12", "8.6.0.163")
        set_version(facts, "nvidia-nccl-cu12", None)

    [finding] = findings(judged, changed_report(TORCH_212, tmp_path / "r.json", drift))["wheels.torch-pins"]
    assert finding["severity"] == "error"
    assert sorted(finding["evidence"]["mismatches"]) == ["nvidia-cudnn-cu12==8.9.2.26: 8.6.0.163", "nvidia-nccl-cu12==2.18.1: missing"]
    assert finding["remedies"][0]["command"] == (
        "/home/user/venv/bin/python -m pip install nvidia-cudnn-cu12==8.9.2.26 nvidia-nccl-cu12==2.18.1"
    )


def test_newer_pin_is_a_warning(judged, tmp_path):
    report = changed_report(TORCH_212, tmp_path / "r.json", lambda f: set_version(f, "nvidia-cublas-cu12", "12.4.5.8"))
    [finding] = findings(judged, report)["wheels.torch-pins"]
    assert finding["severity"] == "warning"


def test_cuda_toolkit_extras_are_checked_through_its_metadata(judged, tmp_path):
    """torch 2.11 pins cuda-toolkit[cublas,...]; the real cuda-toolkit 13.0.2 metadata then pins nvidia-cublas."""
    report = changed_report(H100, tmp_path / "r.json", lambda f: set_version(f, "nvidia-cublas", "13.0.0.19"))
    [finding] = findings(judged, report)["wheels.torch-pins"]
    assert finding["severity"] == "error"
    assert finding["evidence"]["mismatches"] == ["nvidia-cublas==13.1.0.3.*: 13.0.0.19"]


def test_pins_for_another_platform_do_not_apply(judged, tmp_path):
    def windows(facts):
        facts["target"]["python"]["platform"] = "win32"
        set_version(facts, "nvidia-nccl-cu12", None)

    assert "wheels.torch-pins" not in findings(judged, changed_report(TORCH_212, tmp_path / "r.json", windows))
