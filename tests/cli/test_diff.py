"""`envdoctor diff`: real reports of two real environments, crafted ones for the GPU side, schema versions."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import TEST_DATA, run_envdoctor

from envdoctor.facts.environ import THREAD_VARIABLES

DATA = TEST_DATA / "reports"
PYENV_ROOT = Path(os.environ.get("PYENV_ROOT") or subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip() or "~/.pyenv").expanduser()
PY310 = PYENV_ROOT / "versions" / "3.10.13" / "bin" / "python3.10"
PY312 = PYENV_ROOT / "versions" / "3.12.1" / "bin" / "python3.12"


def crafted(name: str) -> str:
    return str(DATA / f"{name}.json")


def aspects(document: dict) -> list:
    return [d["aspect"] for d in document["differences"]]


def by_aspect(document: dict) -> dict:
    return {d["aspect"]: d for d in document["differences"]}


@pytest.fixture(scope="session")
def two_machines(venvs, tmp_path_factory):
    """Reports of two real environments: Python 3.10 with NumPy 1 and gymnasium; Python 3.12 with
    NumPy 2 and OMP_NUM_THREADS=64 set."""
    folder = tmp_path_factory.mktemp("diff-reports")
    a = venvs.get("diff-a", ["numpy<2", "gymnasium==1.0.0"], interpreter=str(PY310))
    b = venvs.get("diff-b", ["numpy>=2,<3"], interpreter=str(PY312))
    paths = {}
    for name, python, env in (("a", a, {}), ("b", b, {"OMP_NUM_THREADS": "64"})):
        paths[name] = folder / f"{name}.json"
        run = run_envdoctor("check", "--no-save", "--no-probe", "--python", str(python), "--json", str(paths[name]), env=env, unset=THREAD_VARIABLES)
        assert run.returncode in (0, 1), run
    return paths["a"], paths["b"]


@pytest.mark.slow
def test_real_environments_rank_python_numpy_and_threads(two_machines, envdoctor):
    a, b = two_machines
    run = envdoctor("diff", str(a), str(b), "--json", "-")
    assert run.returncode == 1, run
    document = run.json()
    found = by_aspect(document)
    assert (found["python.minor"]["a"], found["python.minor"]["b"]) == ("3.10", "3.12")
    assert (found["numpy.major"]["a"], found["numpy.major"]["b"]) == ("1", "2")
    assert (found["package.gymnasium"]["a"], found["package.gymnasium"]["b"]) == ("1.0.0", "not installed")
    assert (found["threads.OMP_NUM_THREADS"]["a"], found["threads.OMP_NUM_THREADS"]["b"]) == ("unset", "64")
    assert found["python.minor"]["impact"] == found["numpy.major"]["impact"] == "likely to break"
    assert found["threads.OMP_NUM_THREADS"]["impact"] == "may break"
    order = aspects(document)
    assert order.index("python.minor") < order.index("numpy.major") < order.index("threads.OMP_NUM_THREADS")
    assert "threads.oversubscribed" in [f["id"] for f in document["findings_only_in_b"]]
    rest = {(c["group"], c["name"]): (c["a"], c["b"]) for c in document["other_differences"]}
    assert ("package", "cloudpickle") in rest
    assert ("package", "gymnasium") not in rest  # said once, among the ranked differences


@pytest.mark.slow
def test_terminal_view_explains_each_difference_and_collapses_the_rest(two_machines, envdoctor):
    a, b = two_machines
    run = envdoctor("diff", str(a), str(b))
    assert run.returncode == 1, run
    assert "[✗] Python  3.10 → 3.12" in run.stdout
    assert "bytecode of one Python minor version" in run.stdout
    assert "[!] OMP_NUM_THREADS  unset → 64" in run.stdout
    assert "Findings only in B:" in run.stdout
    assert "(-v lists them)" in run.stdout and "package cloudpickle" not in run.stdout
    verbose = envdoctor("diff", str(a), str(b), "-v")
    assert "package cloudpickle: " in verbose.stdout


@pytest.mark.slow
def test_markdown_folds_the_rest(two_machines, envdoctor):
    a, b = two_machines
    markdown = envdoctor("diff", str(a), str(b), "--markdown", "-").stdout
    assert "| ❌ likely to break | Python | 3.10 | 3.12 |" in markdown
    assert "<details><summary>Other differences:" in markdown


def test_a_report_against_itself_has_nothing_that_matters(envdoctor):
    run = envdoctor("diff", crafted("h100-cu130"), crafted("h100-cu130"), child=True)  # the command's wiring in a real `python -m envdoctor`
    assert run.returncode == 0, run
    assert "No difference that matters between A and B." in run.stdout


def test_gpu_side_differences_are_ranked_and_explained(envdoctor):
    run = envdoctor("diff", crafted("h100-cu130"), crafted("v100-old-driver"), "--json", "-")
    assert run.returncode == 1, run
    document = run.json()
    assert aspects(document) == [
        "cuda.driver", "gpu.architecture", "wheels.families", "cpu.instruction-sets",
        "threads.OMP_NUM_THREADS", "torch.cpu-capability", "gpu.models",
    ]
    found = by_aspect(document)
    assert "too old for the CUDA 13.0 build" in found["cuda.driver"]["why"]
    assert "no kernels for compute capability 7.0" in found["gpu.architecture"]["why"]
    assert (found["wheels.families"]["a"], found["wheels.families"]["b"]) == ("cu13", "cu12+cu13")
    assert "B lacks avx512f avx512vl avx512bw avx512dq avx512_vnni" in found["cpu.instruction-sets"]["why"]
    assert {d["impact"] for a, d in found.items() if a in ("cuda.driver", "gpu.architecture", "wheels.families", "cpu.instruction-sets")} == {"likely to break"}
    assert [f["id"] for f in document["findings_only_in_b"]] == ["cuda.driver-too-old", "wheels.mixed-cuda-families"]
    assert document["findings_only_in_a"] == []


def test_the_direction_matters(envdoctor):
    """Moving to the machine with the newer driver and more instruction sets breaks nothing of those."""
    found = by_aspect(envdoctor("diff", crafted("v100-old-driver"), crafted("h100-cu130"), "--json", "-").json())
    assert found["cuda.driver"]["impact"] == "changes behaviour"
    assert found["cpu.instruction-sets"]["impact"] == "changes behaviour"
    assert found["gpu.architecture"]["impact"] == "may break"


def test_moving_to_a_machine_without_gpu(envdoctor):
    found = by_aspect(envdoctor("diff", crafted("h100-cu130"), crafted("cpu-only"), "--json", "-").json())
    assert (found["torch"]["a"], found["torch"]["b"]) == ("2.13.0 (cu130)", "2.13.0 (cpu)")
    assert "B's torch is a CPU build" in found["torch"]["why"]
    assert found["cuda.driver"]["b"] == "none" and "no NVIDIA driver" in found["cuda.driver"]["why"]
    assert found["gpu.architecture"]["b"] == "no GPU"


def test_a_measured_gpu_machine_against_this_one(envdoctor, tmp_path):
    """A real H100 report against a real report of this machine, both directions. An empty ENVDOCTOR_ROOT
    shows no NVIDIA driver, so the test reads the same on a GPU machine."""
    here, empty_root = tmp_path / "here.json", tmp_path / "root"
    empty_root.mkdir()
    assert envdoctor("check", "--no-save", "--no-probe", "--json", str(here), env={"ENVDOCTOR_ROOT": str(empty_root)}).returncode in (0, 1)
    found = by_aspect(envdoctor("diff", crafted("h100-measured"), str(here), "--json", "-").json())
    assert found["cuda.driver"]["a"] == "580.159.04 (CUDA 13.0)" and found["cuda.driver"]["b"] == "none"
    assert found["cuda.driver"]["impact"] == found["gpu.architecture"]["impact"] == "likely to break"
    assert found["torch"]["a"] == "2.11.0 (cu130)"
    back = by_aspect(envdoctor("diff", str(here), crafted("h100-measured"), "--json", "-").json())
    assert back["cuda.driver"]["impact"] == back["wheels.families"]["impact"] == "changes behaviour"
    assert back["wheels.families"]["b"] == "cu13"


def test_a_failed_collector_is_not_compared_instead_of_guessed(envdoctor):
    run = envdoctor("diff", crafted("gpu-collector-failed"), crafted("v100-old-driver"), "--json", "-")
    document = run.json()
    assert "cuda.driver" not in aspects(document)
    reasons = {u["aspect"]: u["reason"] for u in document["not_compared"]}
    assert reasons["cuda.driver"] == "A: gpu facts failed: CollectorError: NVML query timed out after 15.0s"
    assert "wheels.families" in aspects(document)
    terminal = envdoctor("diff", crafted("gpu-collector-failed"), crafted("v100-old-driver")).stdout
    assert "Not compared: NVIDIA driver, GPU compute capability, GPU models (A: gpu facts failed:" in terminal


def rewritten(tmp_path: Path, name: str, **changes) -> str:
    data = json.loads(Path(crafted(name)).read_text())
    data.update(changes)
    path = tmp_path / f"{name}-rewritten.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_a_newer_minor_schema_is_read(envdoctor, tmp_path):
    newer = rewritten(tmp_path, "h100-cu130", schema_version="1.9", added_in_1_9={"anything": True})
    run = envdoctor("diff", newer, crafted("h100-cu130"))
    assert run.returncode == 0, run


def test_another_schema_major_is_refused_in_one_line(envdoctor, tmp_path):
    other = rewritten(tmp_path, "h100-cu130", schema_version="2.0")
    run = envdoctor("diff", crafted("h100-cu130"), other)
    assert run.returncode == 2, run
    assert run.stdout == ""
    assert run.stderr.strip().splitlines() == [f"envdoctor: error: {other} uses report schema 2.0; this envdoctor reads 1.x"]


def test_something_else_than_a_report_is_refused(envdoctor, tmp_path):
    path = tmp_path / "notes.json"
    path.write_text('{"hello": "world"}')
    run = envdoctor("diff", str(path), crafted("h100-cu130"))
    assert run.returncode == 2, run
    assert "is not an envdoctor report" in run.stderr and "Traceback" not in run.stderr
