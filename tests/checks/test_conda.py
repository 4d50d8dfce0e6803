"""Conda environments through the CLI: real prefixes with conda's layout (a venv made conda-shaped by a
conda-meta/ folder of records in conda's own format, a root with envs/ and bin/conda), pip's
dist-info beside them, and real ELF files: a C++ extension compiled here that needs GLIBCXX_3.4.30
and an env libstdc++.so.6 linked here that defines only up to GLIBCXX_3.4.28."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

import pytest

from conftest import assert_checks_ran, changed_report, findings_by_id, run_envdoctor
from envdoctor import engine
from envdoctor.codec import encode
from envdoctor.collect.elf import read_versions
from envdoctor.probe.result import Ending, ProbeResult, StageResult, StageStatus

PY38 = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions" / "3.8.18" / "bin" / "python"
CXX_EXTENSION = """
#include <condition_variable>
#include <mutex>
std::mutex m; std::condition_variable cv; bool ready = true;
extern "C" void wait_ready() { std::unique_lock<std::mutex> lock(m); cv.wait(lock, []{ return ready; }); }
"""
OLD_RUNTIME_LABELS = ["GLIBCXX_3.4"] + [f"GLIBCXX_3.4.{n}" for n in range(1, 29)] + ["CXXABI_1.3"] + [f"CXXABI_1.3.{n}" for n in range(1, 13)]
needs_gcc = pytest.mark.skipif(not (shutil.which("g++") and shutil.which("gcc")), reason="needs g++ and gcc to build real ELF files")


def conda_record(name: str, version: str, build: str, channel: str, files: Sequence[str] = (), depends: Sequence[str] = ()) -> dict:
    """A conda-meta/<name>-<version>-<build>.json record as conda writes it: conda's PrefixRecord
    (conda/conda conda/models/records.py: PackageRecord fields plus files, paths_data, link,
    requested_spec), the channel dumped as its URL with the subdir."""
    url = f"https://conda.anaconda.org/{channel}/linux-64/{name}-{version}-{build}.conda"
    return {
        "build": build,
        "build_number": 0,
        "channel": f"https://conda.anaconda.org/{channel}/linux-64",
        "constrains": [],
        "depends": list(depends),
        "extracted_package_dir": f"/opt/conda/pkgs/{name}-{version}-{build}",
        "files": list(files),
        "fn": f"{name}-{version}-{build}.conda",
        "license": "BSD-3-Clause",
        "link": {"source": f"/opt/conda/pkgs/{name}-{version}-{build}", "type": 1},
        "md5": "0" * 32,
        "name": name,
        "package_tarball_full_path": f"/opt/conda/pkgs/{name}-{version}-{build}.conda",
        "paths_data": {"paths": [{"_path": f, "path_type": "hardlink", "sha256": "0" * 64, "size_in_bytes": 1} for f in files], "paths_version": 1},
        "requested_spec": "None",
        "sha256": "0" * 64,
        "size": 1,
        "subdir": "linux-64",
        "timestamp": 1700000000000,
        "url": url,
        "version": version,
    }


class CondaEnv:
    """A conda environment at <root>/envs/<name>: a real interpreter, conda-meta/, site-packages."""

    def __init__(self, root: Path, name: str, interpreter: str):
        self.root, self.prefix = root, root / "envs" / name
        subprocess.run([interpreter, "-m", "venv", "--without-pip", str(self.prefix)], check=True)
        (self.prefix / "conda-meta").mkdir()
        self.python = self.prefix / "bin" / "python"
        self.site = next((self.prefix / "lib").glob("python3.*")) / "site-packages"
        self.record("python", "3.8.18", "h955ad1f_0", "pkgs/main", files=["bin/python3.8"])
        self.record("pip", "23.3.1", "py38h06a4308_0", "pkgs/main", files=[self.dist_info("pip", "23.3.1", installer="conda") + "/METADATA"])

    def record(self, name: str, version: str, build: str, channel: str, files: Sequence[str] = (), depends: Sequence[str] = ()) -> None:
        data = conda_record(name, version, build, channel, files, depends)
        (self.prefix / "conda-meta" / f"{name}-{version}-{build}.json").write_text(json.dumps(data))

    def dist_info(self, name: str, version: str, installer: str = "pip") -> str:
        """A dist-info folder as pip (or conda's python packages) leave it; returns its path relative to the prefix."""
        folder = self.site / f"{name.replace('-', '_')}-{version}.dist-info"
        folder.mkdir()
        (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
        (folder / "INSTALLER").write_text(installer + "\n")
        (folder / "RECORD").write_text("")
        return str(folder.relative_to(self.prefix))

    def torch_files(self, version: str, cuda: Optional[str]) -> None:
        package = self.site / "torch"
        package.mkdir(exist_ok=True)
        (package / "__init__.py").write_text("")
        (package / "version.py").write_text(f"__version__ = '{version}'\ncuda = {cuda!r}\nhip = None\ngit_version = 'x'\n")


def make_root(base: Path) -> Path:
    """A Miniconda-like root: conda-meta/ and an executable bin/conda."""
    root = base / "miniconda3"
    (root / "conda-meta").mkdir(parents=True)
    (root / "envs").mkdir()
    conda = root / "bin" / "conda"
    conda.parent.mkdir()
    conda.write_text(f"#!/bin/sh\necho \"$@\" >> {root / 'conda-ran.log'}\n")
    conda.chmod(0o755)
    return root


def checked(python: Path, *extra: str, env: Optional[Dict[str, str]] = None, unset: Iterable[str] = ("CONDA_PREFIX", "CONDA_DEFAULT_ENV", "CONDA_SHLVL"), skipped=()) -> dict:
    run = run_envdoctor("check", "--python", str(python), "--no-probe", "--no-save", "--no-redact", "--only", "conda", "--json", "-", *extra, env=env, unset=unset)
    assert run.returncode in (0, 1), run
    assert "Traceback" not in run.stderr
    assert_checks_ran(run.json(), "conda", skipped=skipped)
    return run.json()


def only(report: dict, check_id: str) -> dict:
    [finding] = findings_by_id(report)[check_id]
    return finding


def commands(finding: dict) -> List[str]:
    return [r["command"] for r in finding["remedies"] if r["command"]]


@pytest.fixture(scope="session")
def elf_files(tmp_path_factory) -> Dict[str, Path]:
    """A C++ extension needing GLIBCXX_3.4.30 and a libstdc++.so.6 defining up to GLIBCXX_3.4.28, both built here."""
    if not (shutil.which("g++") and shutil.which("gcc")):
        pytest.skip("needs g++ and gcc to build real ELF files")
    base = tmp_path_factory.mktemp("elf")
    (base / "ext.cpp").write_text(CXX_EXTENSION)
    subprocess.run(["g++", "-shared", "-fPIC", "-O1", "-o", str(base / "ext.so"), str(base / "ext.cpp")], check=True)
    (base / "old.map").write_text("".join(f"{label} {{ global: v_{n}; }};\n" for n, label in enumerate(OLD_RUNTIME_LABELS)))
    (base / "old.c").write_text("".join(f"int v_{n};\n" for n in range(len(OLD_RUNTIME_LABELS))))
    runtime = base / "libstdc++.so.6"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(runtime), str(base / "old.c"), f"-Wl,--version-script={base / 'old.map'}", "-Wl,-soname,libstdc++.so.6"], check=True)
    return {"extension": base / "ext.so", "old_runtime": runtime}


def mapush(base: Path, interpreter: str, elf: Dict[str, Path]) -> CondaEnv:
    """The issue's environment: conda's pytorch 1.12.1 for CUDA 11.3 with cudatoolkit, MKL and Intel
    OpenMP and an old libstdcxx-ng; then pip installed torch 2.1.0 (cu12 wheels) and a C++ extension."""
    env = CondaEnv(make_root(base), "mapush", interpreter)
    site = str(env.site.relative_to(env.prefix))
    env.record("cudatoolkit", "11.3.1", "h2bc3f7f_2", "pkgs/main", files=["lib/libcudart.so.11.0", "lib/libcublas.so.11"])
    env.record("pytorch", "1.12.1", "py3.8_cuda11.3_cudnn8.3.2_0", "pytorch", files=[f"{site}/torch-1.12.1.dist-info/METADATA", f"{site}/torch/version.py"], depends=["cudatoolkit >=11.3,<11.4", "mkl >=2018"])
    env.record("mkl", "2021.4.0", "h06a4308_640", "pkgs/main", files=["lib/libmkl_core.so.1", "lib/libmkl_intel_thread.so.1"], depends=["intel-openmp 2021.*"])
    env.record("intel-openmp", "2021.4.0", "h06a4308_3561", "pkgs/main", files=["lib/libiomp5.so", "lib/libiomp5_db.so"])
    env.record("libstdcxx-ng", "9.3.0", "hd4cf53a_17", "pkgs/main", files=["lib/libstdc++.so.6", "lib/libstdc++.so.6.0.28"])
    env.dist_info("torch", "2.1.0")
    env.torch_files("2.1.0", "12.1")
    (env.site / "torch" / "lib").mkdir()
    shutil.copy(elf["old_runtime"], env.site / "torch" / "lib" / "libgomp-a34b3233.so.1")
    env.dist_info("nvidia-cublas-cu12", "12.1.3.1")
    shutil.copy(elf["extension"], env.site / "fancy_ext.cpython-38-x86_64-linux-gnu.so")
    shutil.copy(elf["old_runtime"], env.prefix / "lib" / "libstdc++.so.6")
    return env


@pytest.fixture(scope="session")
def mapush_env(tmp_path_factory, elf_files) -> CondaEnv:
    return mapush(tmp_path_factory.mktemp("conda"), sys.executable, elf_files)


def test_records_activation_and_manager_are_recorded(mapush_env):
    facts = checked(mapush_env.python)["facts"]["target"]["conda"]
    by_name = {r["name"]: r for r in facts["records"]}
    assert by_name["cudatoolkit"] == {
        "name": "cudatoolkit", "version": "11.3.1", "build": "h2bc3f7f_2", "channel": "pkgs/main", "python_dists": [],
        "libraries": ["libcudart.so.11.0", "libcublas.so.11"], "depends": [],
    }
    assert by_name["pytorch"]["python_dists"] == [f"{mapush_env.site.relative_to(mapush_env.prefix)}/torch-1.12.1.dist-info"]
    assert "libraries" not in by_name["python"]
    assert facts["manager"] == {"path": str(mapush_env.root / "bin" / "conda"), "kind": "conda", "via": "root"}
    assert (facts["name"], facts["root"], facts["records_total"], facts["truncated"]) == ("mapush", str(mapush_env.root), 7, None)
    runtime = facts["cxx_runtime"]
    assert runtime["loaded"]["via"] == "env" and runtime["env_library"]["glibcxx"] == "3.4.28"
    assert runtime["requirements"] == [{"path": f"{mapush_env.site.relative_to(mapush_env.prefix)}/fancy_ext.cpython-38-x86_64-linux-gnu.so", "glibcxx": "3.4.30", "cxxabi": "1.3"}]


def test_cuda_majors_mixed_across_conda_and_pip(mapush_env):
    finding = only(checked(mapush_env.python), "conda.mixed-cuda")
    assert finding["severity"] == "error"
    assert finding["evidence"]["conda"]["11"] == ["cudatoolkit 11.3.1 (pkgs/main::h2bc3f7f_2)", "pytorch 1.12.1 (pytorch::py3.8_cuda11.3_cudnn8.3.2_0)"]
    assert finding["evidence"]["pip"] == {"12": ["nvidia-cublas-cu12==12.1.3.1"]}
    assert commands(finding)[0] == f"{mapush_env.root}/bin/conda remove -p {mapush_env.prefix} cudatoolkit pytorch"


def test_conda_and_pip_torch_says_which_loads(mapush_env):
    finding = only(checked(mapush_env.python), "conda.two-torches")
    assert finding["evidence"]["loaded"] == f"torch 2.1.0 by pip in {mapush_env.site}"
    assert "torch/version.py there says 2.1.0 (CUDA 12.1)" in finding["explanation"]
    conda = f"{mapush_env.root}/bin/conda"
    assert commands(finding) == [
        f"{mapush_env.python} -m pip uninstall -y torch && {conda} install -p {mapush_env.prefix} --force-reinstall pytorch==1.12.1 -c pytorch",
        f"{conda} remove -p {mapush_env.prefix} --force pytorch && {mapush_env.python} -m pip install --force-reinstall torch==2.1.0",
    ]


def test_extension_needs_newer_libstdcxx_than_the_env_loads(mapush_env):
    finding = only(checked(mapush_env.python), "conda.cxx-runtime")
    assert finding["severity"] == "error"
    assert finding["title"].startswith("1 extension(s) need GLIBCXX_3.4.30, but the libstdc++ that loads (")
    assert finding["evidence"]["loaded"]["via"] == "env"
    assert finding["evidence"]["needing"] == [f"{mapush_env.site.relative_to(mapush_env.prefix)}/fancy_ext.cpython-38-x86_64-linux-gnu.so: GLIBCXX_3.4.30 CXXABI_1.3"]
    assert commands(finding)[0] == f"{mapush_env.root}/bin/conda install -p {mapush_env.prefix} -c conda-forge 'libstdcxx-ng>=12.1'"


def test_ld_library_path_runtime_is_the_one_judged(mapush_env, elf_files, tmp_path):
    """A folder on LD_LIBRARY_PATH beats the env's lib/: the system's copy put there satisfies the extension."""
    system = read_versions("/usr/lib/x86_64-linux-gnu/libstdc++.so.6") if os.path.exists("/usr/lib/x86_64-linux-gnu/libstdc++.so.6") else None
    if system is None or "GLIBCXX_3.4.30" not in system.defines:
        pytest.skip("the system's libstdc++ does not provide GLIBCXX_3.4.30")
    shutil.copy("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", tmp_path / "libstdc++.so.6")
    report = checked(mapush_env.python, env={"LD_LIBRARY_PATH": str(tmp_path)})
    assert report["facts"]["target"]["conda"]["cxx_runtime"]["loaded"]["via"] == "LD_LIBRARY_PATH"
    assert "conda.cxx-runtime" not in findings_by_id(report)


def test_conda_openmp_beside_the_libgomp_pip_torch_bundles(mapush_env):
    finding = only(checked(mapush_env.python), "conda.openmp-mixed")
    assert finding["severity"] == "warning"
    assert finding["evidence"]["conda"] == {"libiomp5": ["intel-openmp 2021.4.0 (pkgs/main::h06a4308_3561)"]}
    assert finding["evidence"]["pip"] == {"libgomp": [f"{mapush_env.site}/torch/lib/libgomp-a34b3233.so.1"]}
    assert "MKL_THREADING_LAYER=INTEL is incompatible with libgomp.so.1" in finding["explanation"]
    assert commands(finding)[0] == "export MKL_THREADING_LAYER=GNU"


@pytest.mark.parametrize(
    "active, expected",
    [
        ({}, "No conda environment is active"),
        ({"CONDA_PREFIX": "{root}", "CONDA_DEFAULT_ENV": "base", "PATH": "{root}/bin:{path}"}, "Another conda environment is active (base)"),
        ({"CONDA_PREFIX": "{prefix}", "CONDA_DEFAULT_ENV": "mapush", "PATH": "{prefix}/bin:{path}"}, None),
    ],
    ids=["none-active", "base-active", "this-active"],
)
def test_env_not_active(mapush_env, active, expected):
    values = {"root": mapush_env.root, "prefix": mapush_env.prefix, "path": os.environ["PATH"]}
    report = checked(mapush_env.python, env={k: v.format(**values) for k, v in active.items()})
    found = findings_by_id(report).get("conda.env-not-active", [])
    if expected is None:
        assert found == []
        return
    [finding] = found
    assert finding["title"].startswith(expected) and finding["severity"] == "warning"
    assert commands(finding)[0] == f"conda activate {mapush_env.prefix}"


def test_active_env_while_another_interpreter_is_diagnosed(mapush_env, tmp_path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "plain")], check=True)
    env = {"CONDA_PREFIX": str(mapush_env.prefix), "CONDA_DEFAULT_ENV": "mapush", "PATH": f"{mapush_env.prefix}/bin:{os.environ['PATH']}"}
    finding = only(checked(tmp_path / "plain" / "bin" / "python", env=env, skipped=NEEDS_A_PREFIX), "conda.active-env-not-diagnosed")
    assert finding["evidence"]["python_on_path"] == f"{mapush_env.prefix}/bin/python"
    assert commands(finding) == [f"envdoctor check --python {mapush_env.prefix}/bin/python"]


def test_plain_venv_skips_the_conda_checks(tmp_path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "plain")], check=True)
    report = checked(tmp_path / "plain" / "bin" / "python", skipped="conda")
    conda_runs = [c for c in report["checks"] if c["id"].startswith("conda.")]
    assert len(conda_runs) == 6 and not [f for f in report["findings"] if f["id"].startswith("conda.")]
    assert {(c["status"], c["reason"]) for c in conda_runs} == {("skipped", "not a conda environment")}


@needs_gcc
@pytest.mark.slow
@pytest.mark.skipif(not PY38.exists(), reason="needs pyenv's Python 3.8.18")
def test_every_conda_check_under_python_38(tmp_path, elf_files):
    env = mapush(tmp_path, str(PY38), elf_files)
    report = checked(env.python)
    assert report["facts"]["target"]["python"]["version"] == "3.8.18"
    found = findings_by_id(report)
    assert set(found) == {"conda.mixed-cuda", "conda.two-torches", "conda.cxx-runtime", "conda.openmp-mixed", "conda.env-not-active"}
    assert "doctor.check-crashed" not in found


def isaac(base: Path, interpreter: str) -> CondaEnv:
    """NVIDIA's Isaac Gym setup: a Python 3.8 env whose torch and torchvision came from conda."""
    env = CondaEnv(make_root(base), "rlgpu", interpreter)
    for name, version, build, channel in (("pytorch", "1.12.1", "py3.8_cuda11.3_cudnn8.3.2_0", "pytorch"), ("torchvision", "0.13.1", "py38_cu113", "pytorch")):
        env.record(name, version, build, channel, files=[env.dist_info("torch" if name == "pytorch" else name, version, installer="conda") + "/METADATA"])
    env.record("cudatoolkit", "11.3.1", "h2bc3f7f_2", "pkgs/main", files=["lib/libcudart.so.11.0"])
    env.torch_files("1.12.1", "11.3")
    return env


@pytest.fixture(scope="session")
def isaac_env(tmp_path_factory) -> CondaEnv:
    if not PY38.exists():
        pytest.skip("needs pyenv's Python 3.8.18")
    return isaac(tmp_path_factory.mktemp("isaac"), str(PY38))


@pytest.mark.parametrize(
    "cuda, install",
    [
        ("11.6", ["pytorch==1.13.1", "torchvision==0.14.1", "pytorch-cuda=11.6", "-c", "pytorch", "-c", "nvidia"]),
        ("11.3", ["pytorch==1.12.1", "torchvision==0.13.1", "cudatoolkit=11.3", "-c", "pytorch"]),
    ],
)
def test_pin_cuda_plans_in_conda_terms_where_conda_installed_torch(isaac_env, cuda, install):
    run = run_envdoctor("fix", "--pin-cuda", cuda, "--python", str(isaac_env.python), "--json", "-")
    assert run.returncode == 0, run
    plan = run.json()["plan"]
    assert (plan["installer"], plan["refusal"]) == ("conda", None)
    [conda_step] = [s for s in plan["steps"] if s["kind"] == "install"]
    assert conda_step["argv"] == [str(isaac_env.root / "bin" / "conda"), "install", "-y", "-p", str(isaac_env.prefix), *install]
    assert [s["status"] for s in plan["steps"] if s["kind"] == "uninstall"] == ["skipped"]


def test_pin_cuda_apply_of_a_conda_plan_is_refused_before_anything_runs(isaac_env):
    records = sorted(p.name for p in (isaac_env.prefix / "conda-meta").iterdir())
    run = run_envdoctor("fix", "--pin-cuda", "11.6", "--python", str(isaac_env.python), "--apply", "--yes")
    assert run.returncode == 2, run
    assert run.stderr.startswith("envdoctor: error: --apply records and rolls back pip and uv plans only") and run.stderr.count("\n") == 1
    assert "Traceback" not in run.stderr
    assert not (isaac_env.root / "conda-ran.log").exists()
    assert sorted(p.name for p in (isaac_env.prefix / "conda-meta").iterdir()) == records


def test_pin_cuda_refuses_to_mix_installers_where_both_put_a_torch(mapush_env):
    run = run_envdoctor("fix", "--pin-cuda", "12.1", "--python", str(mapush_env.python), "--json", "-")
    assert run.returncode == 1, run
    plan = run.json()["plan"]
    assert plan["steps"] == [] and plan["installer"] == "conda"
    assert plan["refusal"].startswith("torch is installed by conda (pytorch 1.12.1 (pytorch::py3.8_cuda11.3_cudnn8.3.2_0)) and by pip (torch 2.1.0)")


@pytest.fixture(scope="session")
def mapush_report(mapush_env, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("conda-reports") / "mapush.json"
    run = run_envdoctor("check", "--python", str(mapush_env.python), "--no-probe", "--no-save", "--json", str(path), unset=("CONDA_PREFIX",))
    assert run.returncode in (0, 1), run
    return path


def moved_to_cuda12(facts: dict) -> None:
    """B: conda's CUDA 12.1 stack and the env's newer libstdc++ (GCC 13)."""
    conda = facts["target"]["conda"]
    conda["records"] = [r for r in conda["records"] if r["name"] != "cudatoolkit"] + [
        {"name": "pytorch-cuda", "version": "12.1", "build": "ha16c6d3_6", "channel": "pytorch", "python_dists": [], "libraries": [], "depends": []}
    ]
    conda["cxx_runtime"]["loaded"]["library"]["glibcxx"] = "3.4.32"


def test_diff_compares_conda_packages_like_pip_ones(mapush_report, tmp_path):
    b = changed_report(mapush_report, tmp_path / "b.json", moved_to_cuda12)
    run = run_envdoctor("diff", str(mapush_report), str(b), "--json", "-")
    assert run.returncode == 1, run
    document = run.json()
    found = {d["aspect"]: d for d in document["differences"]}
    assert found["conda.cuda"]["a"] == "11: cudatoolkit 11.3.1, pytorch 1.12.1"
    assert found["conda.cuda"]["b"] == "11: pytorch 1.12.1; 12: pytorch-cuda 12.1"
    assert found["conda.cxx-runtime"]["impact"] == "changes behaviour"
    rest = {(c["group"], c["name"]): (c["a"], c["b"]) for c in document["other_differences"]}
    assert rest[("conda package", "cudatoolkit")] == ("11.3.1 (pkgs/main::h2bc3f7f_2)", None)
    back = run_envdoctor("diff", str(b), str(mapush_report), "--json", "-").json()
    assert {d["aspect"]: d for d in back["differences"]}["conda.cxx-runtime"]["impact"] == "likely to break"


def test_diff_with_a_report_from_before_conda_was_read(mapush_report, tmp_path):
    old = changed_report(mapush_report, tmp_path / "old.json", lambda facts: facts["target"].pop("conda"))
    document = run_envdoctor("diff", str(old), str(mapush_report), "--json", "-").json()
    reasons = {u["aspect"]: u["reason"] for u in document["not_compared"]}
    assert reasons["conda.cuda"] == "A: no conda facts in the report (written before envdoctor read conda environments)"


def hostile_conda_facts() -> Iterable[object]:
    """Shapes a recorded report's conda facts may have that envdoctor never writes."""
    yield []
    yield "conda"
    yield {"prefix": 5, "records": "x", "active": [], "cxx_runtime": 3}
    yield {"prefix": "/p", "records": [None, 1, [], {"name": None}, {"name": "cudatoolkit", "version": None, "build": 7, "depends": "x"}]}
    yield {"prefix": "/p", "records": [{"name": "pytorch", "python_dists": [None, 5, "x"], "libraries": {"a": 1}}], "bundled_runtimes": [1, {"libraries": 5}]}
    yield {"prefix": "/p", "cxx_runtime": {"loaded": {"library": {"glibcxx": ["x"]}}, "requirements": [None, {"glibcxx": {}}, {"glibcxx": "9.x.1"}]}}
    yield {"prefix": "/p", "active": {"this_env": False, "prefix": ["x"], "python_on_path_is_this": "no"}, "manager": "conda"}
    yield {"prefix": None, "active": {"prefix": 1, "python_on_path_is_this": False}}


NEEDS_A_PREFIX = "conda.cxx-runtime,conda.env-not-active,conda.mixed-cuda,conda.openmp-mixed,conda.two-torches"  # else: not a conda environment


@pytest.mark.parametrize("hostile", list(hostile_conda_facts()), ids=lambda v: type(v).__name__)
def test_recorded_conda_facts_of_any_shape_are_judged_without_crashing(mapush_report, tmp_path, hostile):
    report = changed_report(mapush_report, tmp_path / "r.json", lambda facts: facts["target"].__setitem__("conda", hostile))
    run = run_envdoctor("check", "--from", str(report), "--only", "conda", "--json", "-")
    assert run.returncode in (0, 1), run
    assert "Traceback" not in run.stderr
    assert "doctor.check-crashed" not in findings_by_id(run.json())
    assert_checks_ran(run.json(), "conda", skipped=NEEDS_A_PREFIX if isinstance(hostile, dict) and hostile.get("prefix") is None else ())
    diffed = run_envdoctor("diff", str(mapush_report), str(report), "--json", "-")
    assert diffed.returncode in (0, 1) and "Traceback" not in diffed.stderr, diffed


def corrupted(data: bytes) -> Iterable[bytes]:
    """Truncations at every structure boundary and single-byte flips across the headers."""
    for size in (0, 3, 16, 52, 63, 64, len(data) // 2, len(data) - 1):
        yield data[:size]
    for offset in range(0, 64, 3):
        yield data[:offset] + bytes([data[offset] ^ 0xFF]) + data[offset + 1:]
    header_at = int.from_bytes(data[0x28:0x30], "little")
    for offset in range(header_at, min(len(data), header_at + 64 * 40), 37):
        yield data[:offset] + b"\xff\xff\xff\x7f" + data[offset + 4:]


def test_elf_reader_never_raises_on_corrupt_objects(elf_files, tmp_path):
    data = elf_files["extension"].read_bytes()
    for n, variant in enumerate(corrupted(data)):
        path = tmp_path / f"c{n}.so"
        path.write_bytes(variant)
        read_versions(str(path))  # None or a result; an exception fails the test


def test_hostile_conda_meta_and_objects_on_disk_are_bounded_and_reported(tmp_path, elf_files):
    env = CondaEnv(make_root(tmp_path), "hostile", sys.executable)
    meta = env.prefix / "conda-meta"
    (meta / "broken-1-0.json").write_text("{not json")
    (meta / "array-1-0.json").write_text("[1, 2]")
    with open(meta / "huge-1-0.json", "wb") as stream:
        stream.truncate(65 * 2**20)  # sparse: above the per-record bound without writing it
    for n, variant in enumerate(corrupted(elf_files["extension"].read_bytes())):
        (env.site / f"bad{n}.cpython-311-x86_64-linux-gnu.so").write_bytes(variant)
    facts = checked(env.python)["facts"]["target"]["conda"]
    unread = {u["file"]: u["reason"] for u in facts["unread"]}
    assert set(unread) == {"broken-1-0.json", "array-1-0.json", "huge-1-0.json"}
    assert unread["huge-1-0.json"] == f"{65 * 2**20} bytes, above {64 * 2**20}"
    assert facts["records_total"] == 5 and [r["name"] for r in facts["records"]] == ["pip", "python"]


@pytest.mark.slow
def test_record_count_is_bounded_with_a_truncation_fact(tmp_path):
    env = CondaEnv(make_root(tmp_path), "many", sys.executable)
    for n in range(3001):
        env.record(f"pkg{n:04d}", "1.0", "0", "conda-forge")
    facts = checked(env.python)["facts"]["target"]["conda"]
    assert len(facts["records"]) == 3000
    assert facts["truncated"] == "read 3000 of 3003 records (at most 3000)"


def test_conda_openmp_names_the_runtimes_the_probe_saw_loaded(mapush_env):
    """The probe's thread-pool stage is the evidence of which runtimes really load together."""
    facts = checked(mapush_env.python)["facts"]
    loaded = [{"user_api": "openmp", "prefix": "libiomp", "filepath": f"{mapush_env.prefix}/lib/libiomp5.so"},
              {"user_api": "openmp", "prefix": "libgomp", "filepath": f"{mapush_env.site}/torch/lib/libgomp-a34b3233.so.1"}]
    pools = StageResult("thread_pools", "thread pools", StageStatus.PASSED, 0.01, details={"openmp_runtimes": loaded})
    probe = encode(ProbeResult(str(mapush_env.python), Ending.COMPLETED, (pools,), 1.0))
    judged = engine.judge(facts, probe, engine.Selection(only=("conda.openmp-mixed",)))
    [finding] = [f for f in judged.findings if f.id == "conda.openmp-mixed"]
    assert finding.evidence["probe_loaded"] == [r["filepath"] for r in loaded]


def test_conda_cuda_mixed_with_two_pip_families_is_one_finding(mapush_report, tmp_path):
    def pip_cu11(facts):
        site = next(d["location"] for d in facts["target"]["distributions"] if d["name"] == "nvidia-cublas-cu12")
        facts["target"]["distributions"].append({"name": "nvidia-cudnn-cu11", "version": "8.5.0.96", "location": site, "requires": []})

    run = run_envdoctor("check", "--from", str(changed_report(mapush_report, tmp_path / "r.json", pip_cu11)), "--only", "conda,wheels", "--json", "-")
    found = findings_by_id(run.json())
    assert "wheels.mixed-cuda-families" not in found
    [finding] = found["conda.mixed-cuda"]
    assert finding["evidence"]["pip"] == {"11": ["nvidia-cudnn-cu11==8.5.0.96"], "12": ["nvidia-cublas-cu12==12.1.3.1"]}
    assert not [c for c in commands(finding) if "X.Y" in c]
