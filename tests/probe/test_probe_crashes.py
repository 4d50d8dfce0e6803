"""Real crashes planted on the target's path: the probe pins each to its stage, classifies how the
process ended, shows the innermost Python frame, and bisection names the change that helps.

Each plant is real code: a `sitecustomize.py` installs an import hook that, when the ladder imports
the trigger module, imports `planted_payload.py`, which really segfaults, executes an illegal
instruction, aborts, deadlocks, raises, or imports a package with a real import cycle.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from conftest import assert_checks_ran, interruptible
from envdoctor import engine
from envdoctor.codec import encode
from envdoctor.probe.probing import run_probe
from envdoctor.probe.runner import ProbeOptions, run_ladder

HOOK = """\
import sys


class Trigger:
    def find_spec(self, name, path=None, target=None):
        if name == {trigger!r}:
            sys.meta_path.remove(self)
            import planted_payload
        return None


sys.meta_path.insert(0, Trigger())
"""
SEGFAULT = "import ctypes\nctypes.string_at(0)\n"
SEGFAULT_UNLESS_ONE_THREAD = "import ctypes, os\nif os.environ.get('OMP_NUM_THREADS') != '1':\n    ctypes.string_at(0)\n"
ILLEGAL_INSTRUCTION = """\
import ctypes, mmap
code = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
code.write(b"\\x0f\\x0b")  # ud2: the instruction x86-64 defines as illegal
ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(code)))()
"""
ABORT = "import ctypes\nctypes.CDLL(None).abort()\n"
DEADLOCK = "import threading\nlock = threading.Lock()\nlock.acquire()\nlock.acquire()\n"
RAISES = "raise RuntimeError('planted: the native library could not be loaded')\n"
CIRCULAR = "import cyclepkg\n"
KILLS_ITS_PARENT = "import os, signal, time\nos.kill(os.getppid(), signal.SIGKILL)\ntime.sleep(30)\n"


def plant(folder: Path, trigger: str, payload: str) -> dict:
    """The environment that makes importing `trigger` run `payload` in the ladder's process."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(HOOK.format(trigger=trigger))
    (folder / "planted_payload.py").write_text(payload)
    return {**os.environ, "PYTHONPATH": str(folder)}


def plant_cycle(folder: Path) -> None:
    """A real distribution `cyclepkg` 1.2.3 whose modules import each other at load time."""
    package = folder / "cyclepkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from cyclepkg.a import helper\n")
    (package / "a.py").write_text("from cyclepkg.b import other\n\ndef helper():\n    return other()\n")
    (package / "b.py").write_text("from cyclepkg import helper\n\ndef other():\n    return 1\n")
    info = folder / "cyclepkg-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cyclepkg\nVersion: 1.2.3\n")
    (info / "top_level.txt").write_text("cyclepkg\n")


def ladder_until(environ: dict, stage: str, timeout: float = 60.0):
    return run_ladder(sys.executable, environ, ProbeOptions(timeout_s=timeout), until=stage)


def finding_ids(probe: dict) -> list:
    findings, _, _, _ = engine.judge({}, probe, engine.Selection(only=("probe",)))
    return findings


def planted_frame(frames) -> dict:
    return next(f for f in frames if f["file"].endswith("planted_payload.py"))


@pytest.mark.slow
def test_segfault_on_torch_import_is_pinned_bisected_and_reported(envdoctor, tmp_path):
    environ = plant(tmp_path / "plant", "torch", SEGFAULT)
    run = envdoctor("check", "--json", "-", "--no-save", env={"PYTHONPATH": environ["PYTHONPATH"]}, child=True)  # the plant is on the doctor's PYTHONPATH too
    assert run.returncode == 1, run
    probe = run.json()["probe"]
    stages = {s["id"]: s for s in probe["stages"]}
    assert [stages[i]["status"] for i in ("interpreter", "import_numpy", "import_torch", "cpu_ops")] == ["passed", "passed", "crashed", "not_run"]
    crash = stages["import_torch"]["crash"]
    assert (crash["signal"], crash["returncode"], crash["fatal_error"]) == ("SIGSEGV", -11, "Segmentation fault")
    assert crash["frames"][0]["function"] == "string_at"
    assert planted_frame(crash["frames"])["line"] == 2
    outcomes = {v["name"]: v["outcome"] for v in probe["bisection"]["variations"]}
    assert outcomes["single-thread"] == outcomes["aten-cpu-default"] == "same"
    assert outcomes["no-cuda"] == "not-applicable"
    findings = {f["id"]: f for f in run.json()["findings"]}
    assert findings["probe.crash"]["severity"] == "error"
    assert "SIGSEGV" in findings["probe.crash"]["title"] and "import torch" in findings["probe.crash"]["title"]
    assert outcomes["no-pythonpath"] == "passed"  # the plant is on PYTHONPATH
    assert [r["command"] for r in findings["probe.bisected"]["remedies"]] == ["unset PYTHONPATH"]
    assert "probe: import torch … crashed (killed by SIGSEGV)" in run.stderr


@pytest.mark.slow
def test_bisection_names_the_thread_setting_that_makes_the_crash_go_away(envdoctor, tmp_path):
    environ = plant(tmp_path / "plant", "numpy", SEGFAULT_UNLESS_ONE_THREAD)
    report = tmp_path / "report.json"
    run = envdoctor("check", "--json", str(report), "--markdown", "-", "--no-save", env={"PYTHONPATH": environ["PYTHONPATH"]}, unset=("OMP_NUM_THREADS",), child=True)
    assert run.returncode == 1, run
    data = json.loads(report.read_text())
    outcomes = {v["name"]: v["outcome"] for v in data["probe"]["bisection"]["variations"]}
    assert outcomes["single-thread"] == "passed"
    assert outcomes["mkl-gnu-threading"] == outcomes["no-user-site"] == "same"
    assert outcomes["aten-cpu-default"] == "not-applicable"  # the crash is before torch loads
    bisected = next(f for f in data["findings"] if f["id"] == "probe.bisected")
    assert [r["command"] for r in bisected["remedies"]] == ["export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1", "unset PYTHONPATH"]
    assert "several OpenMP/BLAS threads" in bisected["explanation"]
    assert "| `export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1` | passed |" in run.stdout
    assert "| import numpy | crashed |" in run.stdout
    rejudged = envdoctor("check", "--from", str(report), "--json", "-", "--no-save")
    assert_checks_ran(rejudged.json(), "probe.bisected,probe.crash")
    assert sorted(f["id"] for f in rejudged.json()["findings"] if f["id"].startswith("probe.")) == ["probe.bisected", "probe.crash"]


def test_illegal_instruction_is_a_sigill_crash(tmp_path):
    result = ladder_until(plant(tmp_path, "numpy", ILLEGAL_INSTRUCTION), "import_numpy")
    stage = result.stage("import_numpy")
    assert (stage.status.value, stage.crash["signal"], stage.crash["fatal_error"]) == ("crashed", "SIGILL", "Illegal instruction")
    assert stage.crash["frames"][0]["file"].endswith("planted_payload.py")
    assert stage.crash["frames"][0]["line"] == 4


def test_a_stage_that_kills_its_parent_is_a_crash_of_that_stage_and_the_doctor_lives(tmp_path):
    """The ladder's parent is its intermediary, not the doctor: the stage is killed by SIGKILL with it."""
    result = ladder_until(plant(tmp_path, "numpy", KILLS_ITS_PARENT), "import_numpy")
    stage = result.stage("import_numpy")
    assert (stage.status.value, stage.crash["signal"]) == ("crashed", "SIGKILL")


def test_abort_is_a_sigabrt_crash_with_its_meaning(tmp_path):
    probe = encode(ladder_until(plant(tmp_path, "numpy", ABORT), "import_numpy"))
    stage = probe["stages"][1]
    assert (stage["status"], stage["crash"]["signal"]) == ("crashed", "SIGABRT")
    assert stage["crash"]["frames"][0]["file"].endswith("planted_payload.py")
    crash = next(f for f in finding_ids(probe) if f.id == "probe.crash")
    assert "gave up on purpose" in crash.explanation


@pytest.mark.slow
def test_deadlock_is_a_hang_with_the_waiting_frame(tmp_path):
    probe = run_probe(sys.executable, plant(tmp_path, "numpy", DEADLOCK), ProbeOptions(timeout_s=3, bisect=False))
    assert probe["ending"] == "timeout"
    stage = probe["stages"][1]
    assert stage["status"] == "hung"
    assert stage["crash"]["timeout_after"] is not None
    waiting = stage["crash"]["frames"][0]
    assert waiting["file"].endswith("planted_payload.py") and waiting["line"] == 4
    assert [s["status"] for s in probe["stages"][2:4]] == ["not_run", "not_run"]
    hang = next(f for f in finding_ids(probe) if f.id == "probe.hang")
    assert "import numpy" in hang.title
    assert hang.evidence["waiting_in"][0].endswith("planted_payload.py:4 in <module>")


def read_until(stream, text: str) -> str:
    """What the doctor writes to `stream` until `text` has appeared (its progress lines end later)."""
    seen = b""
    while text.encode() not in seen:
        chunk = os.read(stream.fileno(), 4096)
        assert chunk, seen.decode()
        seen += chunk
    return seen.decode()


def command_line(process: psutil.Process) -> list:
    """A child's argv, or none once it has ended: a collector's child may end between the listing and the reading."""
    try:
        return process.cmdline()
    except (psutil.ZombieProcess, psutil.NoSuchProcess):
        return []


def test_ctrl_c_during_a_hung_stage_ends_the_ladder_and_skips_bisection(tmp_path):
    """The ladder has its own session, so the terminal's SIGINT reaches only the doctor, whose
    threads wait on the ladder: the interrupt must end the ladder's group, not wait for its limit."""
    environ = {**plant(tmp_path / "plant", "numpy", DEADLOCK), "NO_COLOR": "1"}
    doctor = subprocess.Popen([sys.executable, "-m", "envdoctor", "check", "--only", "probe", "--no-save", "--probe-timeout", "120"], env=environ, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=interruptible)
    progress = read_until(doctor.stderr, "probe: import numpy … ")
    ladder = [p for p in psutil.Process(doctor.pid).children(recursive=True) if command_line(p)[:4] == [sys.executable, "-B", "-X", "faulthandler"]]  # under its intermediary
    assert len(ladder) == 1, progress
    doctor.send_signal(signal.SIGINT)
    _, rest = doctor.communicate(timeout=300)
    stderr = progress + rest.decode()
    assert "hung" not in stderr and "bisecting" not in stderr, stderr  # the stage never reached its 60 s limit
    assert "Traceback" not in stderr and doctor.returncode not in (0, 1), stderr
    assert not ladder[0].is_running() or ladder[0].status() == psutil.STATUS_ZOMBIE  # ended; orphaned with its intermediary, init may not reap it


@pytest.mark.slow
def test_exception_is_classified_with_type_message_and_innermost_frame(tmp_path):
    probe = encode(ladder_until(plant(tmp_path, "numpy", RAISES), "import_torch"))
    stage = probe["stages"][1]
    assert probe["ending"] == "completed"
    assert stage["status"] == "failed"
    assert stage["error"]["type"] == "RuntimeError"
    assert "could not be loaded" in stage["error"]["message"]
    assert stage["error"]["frames"][0]["file"].endswith("planted_payload.py")
    assert stage["error"]["circular_import"] is None
    assert probe["stages"][2]["status"] == "passed"  # torch does not need numpy: the ladder goes on
    found = finding_ids(probe)
    assert [f.id for f in found] == ["probe.import-error"]
    assert "RuntimeError" in found[0].title


def test_circular_import_names_package_version_and_cycle(tmp_path):
    environ = plant(tmp_path, "numpy", CIRCULAR)
    plant_cycle(tmp_path)
    probe = encode(ladder_until(environ, "import_numpy"))
    error = probe["stages"][1]["error"]
    assert error["type"] == "ImportError"
    circular = error["circular_import"]
    assert circular["package"] == "cyclepkg"
    assert circular["distribution"] == {"distribution": "cyclepkg", "version": "1.2.3"}
    assert circular["cycle"] == ["cyclepkg", "cyclepkg.a", "cyclepkg.b", "cyclepkg"]
    found = {f.id: f for f in finding_ids(probe)}
    assert set(found) == {"probe.circular-import"}
    assert "cyclepkg 1.2.3" in found["probe.circular-import"].title
    assert "cyclepkg → cyclepkg.a → cyclepkg.b → cyclepkg" in found["probe.circular-import"].explanation
