"""`check --imports`, shadowing and the probe's circular-import verdict on real messy environments.

One real venv holds real wheels built here whose imports fail in each way (a missing module an extra
provides, a segfault, a hang, NumPy's ABI message), a real old compiled wheel (Bottleneck 1.3.7, built
for NumPy 1) beside NumPy 2, and the real gymnasium, shadowed by a local gymnasium.py in the working
directory. The old wheel is fetched once into ~/.cache/envdoctor/test-wheels (or $ENVDOCTOR_TEST_WHEELS).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, Mapping

import pytest

from envdoctor.checks import imports as judge
from envdoctor.collect.imports import batches, dependency_closure, planned_modules, settle
from conftest import findings_by_id, run_envdoctor
from helpers.local_wheels import packed_wheel

pytestmark = pytest.mark.xdist_group("messy-imports-venv")  # its expensive fixtures are built once, on one worker

VENV = "imports-messy"
FAKES: Dict[str, Mapping[str, str]] = {
    "needs-extra": {"module": "needs_extra", "code": "import cv2\n", "requires": 'opencv-python; extra == "vision"'},
    "crashes-on-import": {"module": "crashes_on_import", "code": "import ctypes\nctypes.string_at(0)\n"},
    "hangs-on-import": {"module": "hangs_on_import", "code": "import time\ntime.sleep(1000)\n"},
    "abi-message": {
        "module": "abi_message",
        "code": "raise ValueError('numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, got 88 from PyObject')\n",
    },
    "kills-its-parent": {"module": "kills_its_parent", "code": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"},
    "imports-fine": {"module": "imports_fine", "code": "VALUE = 1\n"},
    # Its top_level.txt also names folders of its repository that the wheel does not hold, as botorch's does.
    "names-folders": {"module": "names_folders", "code": "VALUE = 1\n", "top_level": "names_folders\ndist\ntutorials\nwebsite\n"},
}
LOCAL_GYMNASIUM = "import gymnasium as gym\nenv = gym.make('CartPole-v1')\n"


def module_wheel(folder: Path, name: str, module: str, code: str, requires: str = "", top_level: str = "") -> Path:
    """A real pure-Python wheel: the module, its METADATA, WHEEL, top_level.txt and RECORD."""
    dist_info = f"{name.replace('-', '_')}-1.0.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n" + (f"Provides-Extra: vision\nRequires-Dist: {requires}\n" if requires else "")
    files = {
        f"{module}/__init__.py": code,
        f"{dist_info}/METADATA": metadata,
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: envdoctor-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist_info}/top_level.txt": top_level or f"{module}\n",
    }
    return packed_wheel(folder / f"{name.replace('-', '_')}-1.0-py3-none-any.whl", dist_info, files)


@pytest.fixture(scope="session")
def messy(venvs, old_wheel, tmp_path_factory) -> Path:
    """A venv whose imports fail in every way, with NumPy 2 and the real gymnasium."""
    folder = tmp_path_factory.mktemp("fake-wheels")
    wheels = [str(module_wheel(folder, name, spec["module"], spec["code"], spec.get("requires", ""), spec.get("top_level", ""))) for name, spec in FAKES.items()]
    python = venvs.get(VENV, ["numpy==2.4.6", "gymnasium==1.4.0"])
    venvs.install(VENV, "--no-deps", str(old_wheel), *wheels)
    return python


@pytest.fixture(scope="session")
def messy_report(messy, tmp_path_factory) -> dict:
    """One real `check --imports` run on the messy venv, from a working directory holding gymnasium.py."""

    cwd = tmp_path_factory.mktemp("project")
    (cwd / "gymnasium.py").write_text(LOCAL_GYMNASIUM)
    report = cwd / "report.json"
    run = run_envdoctor("check", "--python", str(messy), "--imports", "--import-timeout", "2", "--no-probe", "--json", str(report), "--no-save", cwd=cwd)
    assert run.returncode == 1, run
    assert "Traceback" not in run.stderr, run
    return {"run": run, "report": report, "data": json.loads(report.read_text()), "cwd": cwd}


def failures(report: dict) -> Dict[str, dict]:
    return {f["evidence"]["module"]: f for f in findings_by_id(report).get("imports.failed", [])}


def commands(finding: dict) -> list:
    return [r["command"] for r in finding["remedies"]]


@pytest.mark.slow
def test_a_missing_module_that_an_extra_provides_is_named_with_the_extra(messy, messy_report):
    finding = failures(messy_report["data"])["needs_extra"]
    assert (finding["severity"], finding["evidence"]["distribution"], finding["evidence"]["kind"]) == ("warning", "needs-extra", "missing-module")
    assert "No module named 'cv2'" in finding["title"]
    assert commands(finding) == [f"{messy} -m pip install 'needs-extra[vision]'"]


@pytest.mark.slow
def test_a_segfaulting_import_is_a_result_pinned_to_its_module(messy_report):
    finding = failures(messy_report["data"])["crashes_on_import"]
    assert (finding["severity"], finding["evidence"]["distribution"], finding["evidence"]["kind"]) == ("error", "crashes-on-import", "crashed")
    assert "SIGSEGV" in finding["title"]
    assert "string_at" in finding["evidence"]["output"]
    modules = {m["module"]: m for m in messy_report["data"]["facts"]["imports"]["modules"]}
    assert modules["imports_fine"]["status"] == modules["numpy"]["status"] == "ok"  # the crash cost only its own module


@pytest.mark.slow
def test_an_import_that_kills_its_parent_leaves_the_doctor_alive_and_the_report_written(messy_report):
    """Its parent is the intermediary, not the doctor: the doctor survives and judges every other module."""
    modules = {m["module"]: m for m in messy_report["data"]["facts"]["imports"]["modules"]}
    assert "kills_its_parent" in modules and modules["imports_fine"]["status"] == "ok"
    assert failures(messy_report["data"])["crashes_on_import"]["evidence"]["kind"] == "crashed"


@pytest.mark.slow
def test_an_import_that_kills_its_parent_is_named(messy_report):
    """The package that killed its parent is the failure, by the signal its parent died of."""
    finding = failures(messy_report["data"])["kills_its_parent"]
    assert (finding["severity"], finding["evidence"]["distribution"], finding["evidence"]["kind"]) == ("error", "kills-its-parent", "killed-parent")
    assert "killed the process that started it (SIGKILL)" in finding["title"]


@pytest.mark.parametrize("how", ["os.kill(os.getppid(), signal.SIGKILL)", "os.kill(os.getppid(), signal.SIGSEGV)"])
def test_the_import_that_kills_its_parent_is_named_wherever_it_stands_in_its_batch(tmp_path, how):
    """However fast the importing child runs on after the kill, the verdict goes to the module that
    killed its parent, never to the one after it; the others keep their own."""
    (tmp_path / "killer.py").write_text(f"import os, signal\n{how}\n")
    for name in ("before", "after", "later"):
        (tmp_path / f"{name}.py").write_text("VALUE = 1\n")
    environ = {**os.environ, "PYTHONPATH": str(tmp_path)}
    for _ in range(5):
        results = settle(sys.executable, ["before", "killer", "after", "later"], environ, 30.0)
        assert {name: result["status"] for name, result in results.items()} == {"before": "ok", "killer": "killed-parent", "after": "ok", "later": "ok"}
        assert results["killer"]["signal"] == how.rsplit(".", 1)[1].rstrip(")")


@pytest.mark.slow
def test_a_hanging_import_times_out_within_its_limit(messy_report):
    finding = failures(messy_report["data"])["hangs_on_import"]
    assert (finding["severity"], finding["evidence"]["kind"]) == ("warning", "timed-out")
    assert 'hangs_on_import/__init__.py", line 2' in finding["evidence"]["output"]  # the watchdog's stack
    assert any("--import-timeout" in (c or "") for c in commands(finding))
    assert messy_report["data"]["facts"]["imports"]["module_timeout_s"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("module, distribution", [("abi_message", "abi-message"), ("bottleneck", "Bottleneck")])
def test_an_extension_built_for_numpy_1_is_one_numpy_finding_with_both_ways_out(messy, messy_report, module, distribution):
    assert module not in failures(messy_report["data"])  # one cause, said once: by numpy.abi-mismatch
    [finding] = findings_by_id(messy_report["data"])["numpy.abi-mismatch"]
    [line] = [line for line in finding["evidence"]["needs_numpy_1"] if line.startswith(f"{distribution} ")]
    assert f"{module} fails to import: " in line and finding["severity"] == "error"
    assert commands(finding)[0] == f"{messy} -m pip install 'numpy<2'" and distribution.lower() in commands(finding)[1].lower()


@pytest.mark.slow
def test_a_local_gymnasium_py_is_named_as_the_cause_with_both_paths(messy, messy_report):
    data, cwd = messy_report["data"], messy_report["cwd"]
    (shadow,) = findings_by_id(data)["imports.shadowed"]
    local = str(cwd / "gymnasium.py")
    assert shadow["severity"] == "error"
    assert shadow["evidence"]["path"] == local and shadow["evidence"]["source"] == "working directory"
    assert shadow["evidence"]["distribution_path"].endswith("site-packages/gymnasium")
    assert "partially initialized module 'gymnasium'" in shadow["evidence"]["import_error"]
    assert "gymnasium" not in failures(data)  # the shadow is the cause, not a second finding
    rename = commands(shadow)[0]
    subprocess.run(rename, shell=True, check=True, cwd=cwd)
    found = subprocess.run(commands(shadow)[-1], shell=True, capture_output=True, text=True, cwd=cwd)
    assert found.returncode == 0 and found.stdout.strip().endswith("site-packages/gymnasium/__init__.py"), found


@pytest.mark.slow
def test_healthy_modules_give_no_finding_and_from_rejudges_the_same(messy_report, envdoctor):
    data = messy_report["data"]
    assert "imports_fine" not in failures(data) and "numpy" not in failures(data)
    assert not {"names_folders", "dist", "tutorials", "website"} & set(failures(data))  # names without files are not modules
    rejudged = envdoctor("check", "--from", str(messy_report["report"]), "--json", "-", "--no-save")
    assert rejudged.returncode == 1, rejudged
    assert sorted(failures(rejudged.json())) == sorted(failures(data))


def test_imports_with_from_is_a_one_line_usage_error(envdoctor, tmp_path):
    run = envdoctor("check", "--imports", "--from", str(tmp_path / "report.json"))
    assert run.returncode == 2, run
    assert run.stderr.startswith("envdoctor: error: --imports and --from") and run.stderr.count("\n") == 1, run
    assert "Traceback" not in run.stderr and not list(tmp_path.glob("reports/*"))


def test_an_interpreter_that_cannot_start_makes_the_imports_facts_an_error_not_a_crash(envdoctor, tmp_path):
    from envdoctor.collect.imports import collect
    from envdoctor.collect.target import CollectorError

    with pytest.raises(CollectorError):
        collect("/bin/false", dict(os.environ))


def result(message: str, error_type: str = "ImportError", **fields) -> dict:
    return {"module": "pkg", "distribution": "pkg-dist", "version": "1.0", "status": "failed", "error": {"type": error_type, "message": message, "frames": []}, "output": "", **fields}


FACTS = {"target": {"python": {"executable": "/env/bin/python"}, "installers": {"pip": "24.0"}, "distributions": [], "torch_build": None}, "system": {"glibc": "2.31"}}


@pytest.mark.parametrize(
    "message, kind, named, command",
    [
        ("libcudart.so.11.0: cannot open shared object file: No such file or directory", "missing-library", "libcudart.so.11.0", "/env/bin/python -m pip install nvidia-cuda-runtime-cu11"),
        ("libcublas.so.12: cannot open shared object file", "missing-library", "libcublas.so.12", "/env/bin/python -m pip install nvidia-cublas-cu12"),
        ("libGL.so.1: cannot open shared object file: No such file or directory", "missing-library", "libGL.so.1", "sudo apt-get install -y libgl1"),
        ("/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by /x/_ext.so)", "glibc", "GLIBC_2.34", "/env/bin/python -m pip install --force-reinstall --no-cache-dir pkg-dist"),
        ("/usr/lib/libstdc++.so.6: version `GLIBCXX_3.4.30' not found", "libstdcxx", "GLIBCXX_3.4.30", None),
        ("/x/_C.so: undefined symbol: _ZN3c104cuda9SetDeviceEi", "undefined-symbol", "_ZN3c104cuda9SetDeviceEi", "/env/bin/python -m pip install --force-reinstall --no-cache-dir pkg-dist"),
        ("cannot import name 'x' from partially initialized module 'pkg' (most likely due to a circular import)", "circular-import", "pkg", "/env/bin/python -m pip install --upgrade pkg-dist"),
        ("No module named 'sklearn'", "missing-module", "sklearn", "/env/bin/python -m pip install scikit-learn"),
        ("No module named 'pkg._core'", "missing-module", "pkg._core", "/env/bin/python -m pip install --force-reinstall --no-deps pkg-dist==1.0"),
        ("A module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.0", "numpy-abi", "", "/env/bin/python -m pip install --upgrade pkg-dist"),
        ("_ARRAY_API not found", "numpy-abi", "", "/env/bin/python -m pip install --upgrade pkg-dist"),
    ],
)
def test_each_loader_and_python_message_is_classified_with_its_fix(message, kind, named, command):
    failure = judge.classify(result(message, "ModuleNotFoundError" if "No module" in message else "ImportError"))
    assert (failure.kind, failure.named) == (kind, named)
    finding = judge.failure_finding(FACTS, result(message))
    assert finding.evidence["kind"] == kind
    assert command is None or command in [r.command for r in finding.remedies], finding.remedies


@pytest.mark.parametrize("status, fields, kind, severity", [("crashed", {"signal": "SIGILL"}, "crashed", "error"), ("timed_out", {}, "timed-out", "warning"), ("exited", {"returncode": 3}, "exited", "warning")])
def test_how_a_child_ended_is_its_own_kind(status, fields, kind, severity):
    ended = {**result(""), "status": status, "error": None, **fields}
    finding = judge.failure_finding(FACTS, ended)
    assert (finding.evidence["kind"], finding.severity.value) == (kind, severity)


def test_a_stack_package_failure_is_an_error():
    finding = judge.failure_finding(FACTS, {**result("No module named 'sympy'", "ModuleNotFoundError"), "distribution": "torch"})
    assert finding.severity.value == "error"


def test_modules_that_load_torch_are_batched_together():
    plan = {
        "distributions": [
            {"name": "aaa", "modules": ["aaa"], "requires": []},
            {"name": "sb3-contrib", "modules": ["sb3_contrib"], "requires": ["stable-baselines3"]},
            {"name": "torch", "modules": ["torch"], "requires": ["sympy"]},
            {"name": "stable-baselines3", "modules": ["stable_baselines3"], "requires": ["torch"]},
            {"name": "sympy", "modules": ["sympy"], "requires": []},
        ]
    }
    order = [m.name for m in planned_modules(plan)]
    assert set(order[:3]) == {"sb3_contrib", "stable_baselines3", "torch"}
    assert dependency_closure("sb3-contrib", {d["name"]: d["requires"] for d in plan["distributions"]}) == {"sb3-contrib", "stable-baselines3", "torch", "sympy"}
    assert batches(order, 2) == [order[:3], order[3:]]


@pytest.mark.slow
def test_the_probe_names_a_local_gymnasium_py_instead_of_a_circular_import_in_gymnasium(envdoctor, tmp_path):
    (tmp_path / "gymnasium.py").write_text(LOCAL_GYMNASIUM)
    run = envdoctor("check", "--only", "probe", "--json", "-", "--no-save")
    assert run.returncode == 1, run
    (finding,) = findings_by_id(run.json())["probe.circular-import"]
    local = str(tmp_path / "gymnasium.py")
    assert finding["title"].startswith(f"gymnasium is shadowed by {local}")
    assert finding["evidence"]["shadowed_by"] == local
    assert not any("--force-reinstall" in (c or "") for c in commands(finding))
    subprocess.run(commands(finding)[0], shell=True, check=True, cwd=tmp_path)
    found = subprocess.run(commands(finding)[-1], shell=True, capture_output=True, text=True, cwd=tmp_path)
    assert found.returncode == 0 and found.stdout.strip().endswith("site-packages/gymnasium/__init__.py"), found


@pytest.mark.slow
def test_bisection_pins_a_crash_to_the_pythonpath_entry(envdoctor, tmp_path):
    folder = tmp_path / "on-pythonpath"
    folder.mkdir()
    (folder / "numpy.py").write_text("import ctypes\nctypes.string_at(0)\n")
    run = envdoctor("check", "--only", "probe", "--json", "-", "--no-save", env={"PYTHONPATH": str(folder)}, child=True)  # the stand-in is on the doctor's PYTHONPATH too
    assert run.returncode == 1, run
    outcomes = {v["name"]: v["outcome"] for v in run.json()["probe"]["bisection"]["variations"]}
    assert outcomes["no-pythonpath"] == "passed" and outcomes["single-thread"] == "same"
    (bisected,) = findings_by_id(run.json())["probe.bisected"]
    assert commands(bisected) == ["unset PYTHONPATH"] and "PYTHONPATH" in bisected["explanation"]
