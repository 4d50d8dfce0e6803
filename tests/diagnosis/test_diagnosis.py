"""One diagnosis across run, check and inspect: diagnosis[0] names the root cause with the evidence
that links it, for real failing programs run through the CLI, and for recorded runs and probes."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import SB3_DATA, assert_checks_ran, run_envdoctor
from envdoctor import engine
from envdoctor.checks import Check
from envdoctor.codec import encode
from envdoctor.diagnosis import LINKS
from envdoctor.diagnosis.judge import link_and_rank
from envdoctor.model import Finding, Severity
from envdoctor.probe.result import Bisection, Ending, Outcome, ProbeResult, StageResult, StageStatus, VariationResult

GIB = 1 << 30


def crash_report(tmp_path: Path, *command: str, env=None, cwd=None) -> dict:
    """`envdoctor run -- COMMAND` and the JSON crash report it saved."""
    reports = tmp_path / "reports"
    run = run_envdoctor("run", "--report-dir", str(reports), "--", *command, env=env, cwd=cwd or tmp_path, child=True)
    saved = sorted(reports.glob("crash-*.json"))
    assert saved, run
    report = json.loads(saved[-1].read_text())
    assert report["schema_version"] == "1.1"
    return {"exit": run.returncode, "stderr": run.stderr, **report}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.slow
def test_a_foreign_bytecode_model_on_argv_is_the_cause_of_the_segfault(models, tmp_path):
    report = crash_report(tmp_path, sys.executable, str(SB3_DATA / "load_model.py"), "MaskablePPO", str(models["foreign_py313"]))
    assert report["exit"] == 139
    cause = report["diagnosis"][0]
    assert (cause["id"], cause["confidence"]) == ("sb3.foreign-bytecode", "confirmed")
    assert any("a function this model pickled" in line for line in cause["evidence"])
    assert any(str(models["foreign_py313"]) in line for line in cause["evidence"])
    assert cause["remedy"]["kind"] == "python" and "custom_objects" in cause["remedy"]["command"]
    assert "Cause: " in report["stderr"] and "(confirmed; sb3.foreign-bytecode)" in report["stderr"].replace("\n", " ")


@pytest.mark.slow
def test_a_model_path_read_from_a_config_file_is_found_through_the_open_audit(models, tmp_path):
    config = write(tmp_path / "conf" / "eval.json", json.dumps({"checkpoint": str(models["foreign_py313"])}))
    program = write(tmp_path / "eval.py", f"""\
        import json, sys
        sys.path.insert(0, {str(SB3_DATA)!r})
        from sb3_contrib import MaskablePPO
        MaskablePPO.load(json.load(open({str(config)!r}))["checkpoint"], device="cpu")
        """)
    report = crash_report(tmp_path, sys.executable, str(program))
    assert str(models["foreign_py313"]) in report["run"]["opened_files"]
    assert report["facts"]["models"]["files"][0]["path"].endswith("foreign_py313.zip")
    cause = report["diagnosis"][0]
    assert cause["id"] == "sb3.foreign-bytecode" and cause["confidence"] == "confirmed"
    assert any(line.startswith("the program opened") for line in cause["evidence"])


@pytest.mark.slow
def test_a_model_resumed_for_training_crashes_in_train_and_names_the_model(models, tmp_path):
    report = crash_report(tmp_path, sys.executable, str(SB3_DATA / "load_model.py"), "MaskablePPO", str(models["foreign_py312"]), "--learn")
    assert report["exit"] == 139
    assert report["diagnosis"][0]["id"] == "sb3.foreign-bytecode"
    assert report["diagnosis"][0]["confidence"] in ("confirmed", "likely")


def circular_framework(root: Path) -> Path:
    write(root / "rlkit" / "__init__.py", "from rlkit import agents\n")
    write(root / "rlkit" / "agents.py", "from rlkit.buffers import Buffer\nclass Agent: pass\n")
    write(root / "rlkit" / "buffers.py", "from rlkit.agents import Agent\nclass Buffer: pass\n")
    return write(root / "train.py", "import rlkit\n")


def test_a_circular_import_in_a_framework_is_named_with_its_cycle(tmp_path):
    program = circular_framework(tmp_path)
    report = crash_report(tmp_path, sys.executable, str(program))
    assert report["exit"] == 1
    cause = report["diagnosis"][0]
    assert (cause["id"], cause["confidence"]) == ("run.exception", "likely")
    assert "import cycle: rlkit.agents → rlkit.buffers → rlkit.agents" in cause["evidence"]
    assert "find_spec(\"rlkit\")" in cause["remedy"]["command"]
    [finding] = [f for f in report["findings"] if f["id"] == "run.exception"]
    assert finding["evidence"]["kind"] == "circular-import" and finding["evidence"]["type"] == "ImportError"


def test_a_crash_nothing_explains_says_so_and_gives_the_next_step(tmp_path):
    report = crash_report(tmp_path, sys.executable, "-c", "import ctypes; ctypes.string_at(0)")
    assert report["exit"] == 139
    cause = report["diagnosis"][0]
    assert (cause["id"], cause["confidence"]) == ("run.crashed", "none")
    assert "--gdb --bisect" in cause["remedy"]["command"]
    assert "Cause: unknown." in report["stderr"]


def test_the_users_own_sitecustomize_still_runs_and_the_real_environment_is_judged(tmp_path):
    own = write(tmp_path / "site" / "sitecustomize.py", "import sys\nprint('own sitecustomize ran', file=sys.stderr)\n")
    program = write(tmp_path / "prog.py", "import ctypes, os\nopen(os.path.join(os.path.dirname(__file__), 'x.zip'), 'wb').close()\nopen(os.path.join(os.path.dirname(__file__), 'x.zip'), 'rb').close()\nctypes.string_at(0)\n")
    wrapper = f"export OMP_NUM_THREADS=77; exec {sys.executable} {program}"
    report = crash_report(tmp_path, "bash", "-c", wrapper, env={"PYTHONPATH": str(own.parent)})
    assert "own sitecustomize ran" in report["stderr"]
    process = report["run"]["python_processes"][0]
    assert process["environ_changes"] == {"OMP_NUM_THREADS": "77"}  # PYTHONPATH as the user gave it
    assert report["facts"]["environ"]["variables"]["OMP_NUM_THREADS"] == "77"
    assert report["facts"]["environ"]["variables"]["PYTHONPATH"] == str(own.parent)
    assert str(tmp_path / "x.zip") in report["run"]["opened_files"]


def recorded_run(**changes) -> dict:
    run = {
        "command": ["python", "train.py"], "under_gdb": False, "duration_s": 10.0, "hang_timeout_s": None, "sample_interval_s": 0.5,
        "ending": {"kind": "signal", "returncode": -11, "exit_status": 139, "signal": 11, "signal_name": "SIGSEGV", "signal_meaning": "segmentation fault", "forwarded_signals": []},
        "python_stacks": None, "native_stacks": None, "output_tail": [],
        "memory": {"samples": [], "peak_rss_bytes": GIB, "peak_rss_at_s": 1.0, "address_space_limit_bytes": None, "cgroups": [], "kernel_oom_lines": []},
        "gpu": {"source": "nvml", "devices": [{"index": 0, "name": "NVIDIA H100", "total_bytes": 80 * GIB}], "samples": [{"t": 8.0, "gpu_used_bytes": [79 * GIB]}], "problems": []},
    }
    run.update(changes)
    return run


def test_a_segfault_right_after_the_gpu_filled_is_likely_gpu_oom():
    judged = engine.judge({}, None, engine.Selection(), recorded_run())
    assert (judged.diagnosis[0].id, judged.diagnosis[0].confidence) == ("run.gpu-out-of-memory", "likely")
    assert judged.diagnosis[0].evidence == ("GPU 0 (NVIDIA H100) used 80896 MiB of 81920 MiB",)


def test_an_oom_kill_counted_by_the_cgroup_is_confirmed():
    memory = {"samples": [], "peak_rss_bytes": 3 * GIB, "peak_rss_at_s": 9.0, "address_space_limit_bytes": None, "kernel_oom_lines": [],
              "cgroups": [{"path": "/sys/fs/cgroup/job", "version": 2, "limit_bytes": 3 * GIB, "oom_kills_during_run": 1}]}
    ending = {"kind": "signal", "returncode": -9, "exit_status": 137, "signal": 9, "signal_name": "SIGKILL", "signal_meaning": "killed", "forwarded_signals": []}
    judged = engine.judge({}, None, engine.Selection(), recorded_run(memory=memory, ending=ending, gpu={"devices": [], "samples": []}))
    assert (judged.diagnosis[0].id, judged.diagnosis[0].confidence) == ("run.out-of-memory", "confirmed")


NO_SWAP = {"memory": {"ram_total_bytes": 24 * GIB, "ram_available_bytes": 23 * GIB, "swap_total_bytes": 0, "shm_total_bytes": 12 * GIB, "shm_free_bytes": 12 * GIB}}


@pytest.mark.parametrize("peak_gib, headline", [(0.01, ("run.exception", "likely")), (20, ("memory.low-ram", "likely"))])
def test_a_lost_pipe_blames_missing_swap_only_when_the_runs_memory_came_near_the_ram(peak_gib, headline):
    """A worker that died without a word may have been OOM-killed; with no swap that is likely only where
    the command's own processes came near the RAM, else the lost pipe is the cause and its peak is said."""
    memory = {"samples": [], "peak_rss_bytes": int(peak_gib * GIB), "peak_rss_at_s": 1.0, "address_space_limit_bytes": None,
              "ram_total_bytes": 24 * GIB, "cgroups": [], "kernel_oom_lines": []}
    ending = {"kind": "exit", "returncode": 1, "exit_status": 1, "signal": None, "signal_name": None, "signal_meaning": None, "forwarded_signals": []}
    run = recorded_run(memory=memory, ending=ending, gpu={"devices": [], "samples": []}, exception={"type": "BrokenPipeError", "message": "[Errno 32] Broken pipe"})
    judged = engine.judge(dict(NO_SWAP), None, engine.Selection(), run)
    first = judged.diagnosis[0]
    assert (first.id, first.confidence) == headline, judged.diagnosis
    said = [line for line in first.evidence if "peaked at" in line]
    assert said == (["the command's processes peaked at 10 MiB, 0% of the RAM limit: nothing it recorded shows memory running out"] if peak_gib < 1 else []), first.evidence


def crashing_probe(passing: str) -> dict:
    pools = StageResult("thread_pools", "thread pools", StageStatus.PASSED, 0.01, details={"openmp_runtimes": [
        {"user_api": "openmp", "prefix": "libiomp", "filepath": "/opt/conda/lib/libiomp5.so"},
        {"user_api": "openmp", "prefix": "libgomp", "filepath": "/venv/torch/lib/libgomp.so.1"}]})
    crashed = StageResult("learn", "a few learn steps", StageStatus.CRASHED, 2.0, crash={"signal": "SIGSEGV", "returncode": -11, "frames": []})
    bisection = Bisection("learn", "SIGSEGV", (VariationResult(passing, "export OMP_NUM_THREADS=1", Outcome.PASSED if passing != "mkl-gnu-threading" else Outcome.SAME), VariationResult("no-cuda", "export CUDA_VISIBLE_DEVICES=", Outcome.SAME)))
    return encode(ProbeResult("python", Ending.SIGNAL, (pools, crashed), 3.0, -11, "SIGSEGV", bisection=bisection))


def test_check_ranks_the_probe_crash_bisection_and_static_findings_into_one_cause():
    judged = engine.judge({}, crashing_probe("single-thread"), engine.Selection())
    cause = judged.diagnosis[0]
    assert (cause.id, cause.confidence) == ("threads.multiple-openmp", "confirmed")
    assert cause.evidence[0] == "re-run with only single-thread changed, the failure goes away"


def test_without_a_passing_variation_the_static_finding_that_breaks_the_stage_is_likely():
    judged = engine.judge({}, crashing_probe("mkl-gnu-threading"), engine.Selection())
    cause = judged.diagnosis[0]
    assert (cause.id, cause.confidence, cause.rule) == ("threads.multiple-openmp", "likely", "probe-stage")
    assert cause.evidence[0].startswith("The probe was killed by SIGSEGV in stage")


def test_a_bisection_pointing_at_nothing_known_is_itself_the_cause():
    judged = engine.judge({}, crashing_probe("no-ld-overrides"), engine.Selection())
    assert (judged.diagnosis[0].id, judged.diagnosis[0].confidence) == ("probe.bisected", "confirmed")


def test_a_linking_rule_that_raises_is_a_visible_crash_and_the_report_still_has_a_diagnosis():
    def broken(facts):
        raise KeyError("ending")

    LINKS.append(Check("diagnosis.broken", "raises", (), broken))
    try:
        judged = engine.judge({}, None, engine.Selection(), recorded_run())
    finally:
        LINKS.pop()
    [crashed] = [f for f in judged.findings if f.id == "doctor.check-crashed"]
    assert crashed.evidence["check"] == "diagnosis.broken"
    assert [r.status.value for r in judged.runs if r.id == "diagnosis.broken"] == ["crashed"]
    assert judged.diagnosis[0].id == "run.gpu-out-of-memory"


def test_a_check_cannot_give_a_finding_under_another_checks_id():
    from envdoctor.checks.runner import run_one

    def impostor(facts):
        yield Finding("cuda.driver-too-old", Severity.ERROR, "not mine to say")

    findings, run = run_one(Check("site.impostor", "gives another id", (), impostor), {})
    assert run.status.value == "crashed" and "'cuda.driver-too-old', not its own" in run.reason
    assert [f.id for f in findings] == ["doctor.check-crashed"]


def test_a_recorded_report_without_a_diagnosis_still_reads_and_gets_one(tmp_path):
    judged = engine.judge({}, None, engine.Selection(), recorded_run())
    from envdoctor.model import Report

    old = encode(Report("0.1.0", "2026-01-01T00:00:00+00:00", "python", {}, tuple(judged.findings), run=recorded_run(), schema_version="1.0"))
    del old["diagnosis"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    rejudged = run_envdoctor("check", "--from", str(path), "--json", "-", "--no-save")
    assert rejudged.returncode in (0, 1), rejudged
    assert rejudged.json()["diagnosis"][0]["id"] == "run.gpu-out-of-memory"
    assert_checks_ran(rejudged.json(), ran=())
    assert os.path.getsize(path) > 0


EXTENSION = """\
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>
static struct PyModuleDef definition = {PyModuleDef_HEAD_INIT, "np1ext", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_np1ext(void) { import_array(); return PyModule_Create(&definition); }
"""


def numpy1_extension(folder: Path) -> Path:
    """A real C extension compiled against NumPy 1.26's headers (from its wheel), to import under NumPy 2."""
    import subprocess
    import sysconfig
    import zipfile

    subprocess.run([sys.executable, "-m", "pip", "download", "numpy==1.26.4", "--no-deps", "--only-binary=:all:", "-d", str(folder), "-q"], check=True, timeout=300)
    zipfile.ZipFile(next(folder.glob("numpy-1.26.4-*.whl"))).extractall(folder / "numpy1")
    source = write(folder / "np1ext.c", EXTENSION)
    built = folder / f"np1ext{sysconfig.get_config_var('EXT_SUFFIX')}"
    include = [f"-I{sysconfig.get_paths()['include']}", f"-I{folder / 'numpy1' / 'numpy' / 'core' / 'include'}"]
    subprocess.run(["gcc", "-shared", "-fPIC", "-w", *include, str(source), "-o", str(built)], check=True, timeout=120)
    return built


@pytest.mark.slow
def test_an_extension_built_for_numpy_1_under_numpy_2_is_named_with_its_remedy(tmp_path):
    import numpy

    assert numpy.__version__.startswith("2.")
    numpy1_extension(tmp_path)
    report = crash_report(tmp_path, sys.executable, "-c", "import np1ext")
    cause = report["diagnosis"][0]
    assert cause["id"] in ("run.exception", "numpy.abi-mismatch") and cause["confidence"] in ("likely", "confirmed")
    assert "another NumPy ABI" in cause["summary"] or cause["id"] == "numpy.abi-mismatch"
    [finding] = [f for f in report["findings"] if f["id"] == "run.exception"]
    assert finding["evidence"]["kind"] == "numpy-abi"
    assert "numpy<2" in finding["remedies"][0]["command"]


def exception_run(type_: str, message: str, frames=()) -> dict:
    """A recorded run that exited of `type_: message`, raised at `frames` (innermost first)."""
    ending = {"kind": "exit", "returncode": 1, "exit_status": 1, "signal": None, "signal_name": None, "signal_meaning": None, "forwarded_signals": []}
    return recorded_run(ending=ending, exception={"type": type_, "message": message, "frames": list(frames)}, gpu={"devices": [], "samples": []})


def test_a_numpy_2_pickle_under_numpy_1_heads_as_the_models_numpy_major_not_a_missing_module():
    run = exception_run("ModuleNotFoundError", "No module named 'numpy._core'", [{"file": "/venv/lib/python3.11/site-packages/stable_baselines3/common/save_util.py", "line": 450, "function": "load_from_zip_file"}])
    judged = engine.judge({}, None, engine.Selection(), run)
    [said] = [f for f in judged.findings if f.id == "run.exception"]
    assert said.evidence["kind"] == "numpy-pickle" and "'numpy>=2'" in said.remedies[0].command
    assert (judged.diagnosis[0].id, judged.diagnosis[0].confidence) == ("run.exception", "confirmed")
    major = Finding("sb3.numpy-major", Severity.ERROR, "model.zip was saved with NumPy 2.1.0; this environment has NumPy 1.26.4")
    diagnosis, _, _ = link_and_rank({"run": run}, [said, major], LINKS)
    assert (diagnosis[0].id, diagnosis[0].confidence) == ("sb3.numpy-major", "confirmed")
    assert "classified as numpy-pickle, which sb3.numpy-major explains" in diagnosis[0].evidence


def test_an_exception_of_the_programs_own_code_is_a_confirmed_cause_with_its_line():
    judged = engine.judge({}, None, engine.Selection(), exception_run("KeyError", "'batch_size'", [{"file": "/srv/train.py", "line": 12, "function": "main"}]))
    cause = judged.diagnosis[0]
    assert (cause.id, cause.confidence) == ("run.exception", "confirmed")
    assert cause.summary == "Your program raised KeyError at train.py:12: 'batch_size'"
    assert "nothing in the environment is implicated" in cause.evidence[-1]


def test_an_unknown_exception_raised_inside_a_library_is_likely_not_confirmed():
    judged = engine.judge({}, None, engine.Selection(), exception_run("ValueError", "bad value", [{"file": "/venv/lib/python3.11/site-packages/lib/core.py", "line": 3, "function": "f"}]))
    assert (judged.diagnosis[0].id, judged.diagnosis[0].confidence) == ("run.exception", "likely")


def test_in_a_wrapper_that_runs_two_interpreters_the_one_that_failed_is_diagnosed(tmp_path):
    other = "/usr/bin/python3" if os.path.realpath("/usr/bin/python3") != os.path.realpath(sys.executable) else pytest.skip("no second interpreter")
    wrapper = write(tmp_path / "train.sh", f"""\
        {other} -c "import sys; print(sys.version)"
        {sys.executable} -c "import wandb_tracking_client"
        """)
    report = crash_report(tmp_path, "bash", str(wrapper))
    ended = {p["executable"]: p["ended"] for p in report["run"]["python_processes"]}
    assert ended == {other: "exit", sys.executable: "exception"}
    assert report["target_python"] == sys.executable
    [said] = [f for f in report["findings"] if f["id"] == "run.exception"]
    assert said["remedies"][0]["command"].startswith(sys.executable + " -m pip install")


MAKE_FOREIGN_PICKLE = """\
import cloudpickle, sys
def schedule(initial):
    def func(progress):
        return progress * initial
    return func
cloudpickle.dump(schedule(3e-4), open(sys.argv[1], "wb"))
"""


@pytest.mark.slow
def test_a_plain_cloudpickle_from_another_python_that_segfaults_is_inspected_and_named_as_the_cause(venvs, tmp_path):
    from helpers.pythons import needed_python

    maker = write(tmp_path / "maker.py", MAKE_FOREIGN_PICKLE)
    python313 = venvs.get("cloudpickle-3.13", ["cloudpickle"], interpreter=needed_python("3.13"))
    import subprocess

    subprocess.run([str(python313), str(maker), str(tmp_path / "schedule.pkl")], check=True, timeout=120)
    maker.unlink()  # the pickle was written on another machine: its code's file is not here
    program = write(tmp_path / "resume.py", """\
        import cloudpickle
        schedule = cloudpickle.load(open("schedule.pkl", "rb"))
        print(schedule(0.5))
        """)
    report = crash_report(tmp_path, sys.executable, str(program))
    assert report["run"]["ending"]["kind"] == "signal", report["stderr"]
    assert str(tmp_path / "schedule.pkl") in report["run"]["opened_files"]
    cause = report["diagnosis"][0]
    assert (cause["id"], cause["confidence"]) == ("sb3.foreign-bytecode", "confirmed")
    assert cause["summary"] == "schedule.pkl holds code pickled by Python 3.13; this is Python 3.11: calling it can segfault"
    assert any(line.startswith(f"the program opened {tmp_path / 'schedule.pkl'}") for line in cause["evidence"])
    assert "under the Python that wrote it" in cause["remedy"]["summary"]
    [finding] = [f for f in report["findings"] if f["id"] == "sb3.foreign-bytecode"]
    assert "`schedule.pkl` (schedule.<locals>.func) runs when the program calls it" in finding["explanation"]


@pytest.mark.parametrize("changes", [
    {"loader": {"library": 7, "loaded": ["x"], "defined_by": "abc", "needed": 5, "loaded_defines_version": False, "via": None}},
    {"loader": "not a mapping", "opened_files": 5},
    {"opened_files": ["a.pkl", None, 3], "python_stacks": {"threads": [{"current": True, "frames": [{"file": "<dynamic-code>", "line": None, "function": "f"}]}]}},
    {"native_stacks": {"threads": [{"stopped": True, "frames": [{"function": "f", "repeated": True}, 7]}]}},
], ids=["loader of the wrong types", "loader and files not lists", "odd opened files", "odd native frames"])
def test_a_hostile_recorded_run_is_judged_without_a_crashed_check(changes):
    judged = engine.judge({}, None, engine.Selection(), recorded_run(**changes))
    assert [f.evidence.get("check") for f in judged.findings if f.id == "doctor.check-crashed"] == []
