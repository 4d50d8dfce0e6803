"""`fix --apply` and `fix --rollback` for real: a throwaway venv with real pip, torch 2.13.0 CPU and the
real nvidia-cuda-runtime-cu11 and -cu12 wheels (under 1 MB each).

Installer children run with PIP_NO_INDEX and a constraint holding torch at the CPU build, so nothing
here can reach an index or resolve a CUDA torch: reinstalling a removed wheel comes from the local
wheel folder. The wheels are fetched once into ~/.cache/envdoctor/test-wheels (or $ENVDOCTOR_TEST_WHEELS).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import interruptible
from envdoctor.fix import apply as applying
from envdoctor.fix import record as records
from envdoctor.fix.inputs import gather
from envdoctor.fix.installer import Installer
from envdoctor.fix.mixed_wheels import plan_mixed_wheels
from envdoctor.fix.plan import Step, StepKind

pytestmark = pytest.mark.slow

WHEELS = {"nvidia-cuda-runtime-cu11": "11.7.99", "nvidia-cuda-runtime-cu12": "12.1.105"}
VENV = "fix-mixed"


@pytest.fixture(scope="session")
def wheel_dir() -> Path:
    folder = Path(os.environ.get("ENVDOCTOR_TEST_WHEELS") or Path.home() / ".cache" / "envdoctor" / "test-wheels")
    folder.mkdir(parents=True, exist_ok=True)
    missing = [f"{n}=={v}" for n, v in WHEELS.items() if not list(folder.glob(f"{n.replace('-', '_')}-{v}-*.whl"))]
    if missing:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(folder), *missing], capture_output=True, text=True)
        if done.returncode:
            pytest.fail(f"the wheels {missing} are neither in {folder} nor downloadable: {done.stderr.strip().splitlines()[-1:]}")
    return folder


@pytest.fixture(scope="session")
def offline(wheel_dir, tmp_path_factory) -> dict:
    """Environment for envdoctor's children: no index, local wheels only, torch held at the CPU build."""
    constraint = tmp_path_factory.mktemp("pip") / "constraints.txt"
    constraint.write_text("torch==2.13.0+cpu\n")
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": f"{wheel_dir} /opt/wheels", "PIP_CONSTRAINT": str(constraint)}


@pytest.fixture
def mixed(venvs, wheel_dir) -> Path:
    """A venv with pip, torch 2.13.0 CPU and both runtime wheels (put back if a test took them)."""
    wheels = ["--find-links", str(wheel_dir), *(f"{n}=={v}" for n, v in WHEELS.items())]
    python = venvs.get(VENV, ["torch==2.13.0", *wheels], with_pip=True)
    venvs.install(VENV, *wheels)
    return python


def freeze(python: Path) -> str:
    return subprocess.run([str(python), "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True).stdout


def tree_digest(root: Path) -> dict:
    """Every file under `root` with its content hash and mode: byte-for-byte identity of a venv."""
    digest = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            digest[str(path.relative_to(root))] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode)
        elif path.is_symlink():
            digest[str(path.relative_to(root))] = ("link", os.readlink(path))
    return digest


def wheel_findings(envdoctor, python: Path) -> list:
    """The ids of what `envdoctor check --only wheels` finds in the environment now."""
    run = envdoctor("check", "--python", str(python), "--only", "wheels", "--no-save", "--json", "-")
    assert run.returncode in (0, 1), run
    return [f["id"] for f in run.json()["findings"]]


def only_record(report_dir: Path) -> Path:
    (folder,) = list(report_dir.glob("fix-*"))
    return folder


def test_plain_fix_changes_nothing(mixed, envdoctor, offline, tmp_path):
    frozen = freeze(mixed)  # first: pip run by the test may cache its own bytecode in the environment
    before = tree_digest(mixed.parent.parent)
    for args in (["--mixed-wheels"], ["--pin-cuda", "12.1"], ["--pin-cuda", "11.6", "--format", "sh"], ["--mixed-wheels", "--format", "json"]):
        run = envdoctor("fix", *args, "--python", str(mixed), env=offline)
        assert run.returncode in (0, 1), run
    assert envdoctor("fix", "--mixed-wheels", "--python", str(mixed)).stdout.count("[planned]") == 2
    assert tree_digest(mixed.parent.parent) == before
    assert freeze(mixed) == frozen
    assert not list(tmp_path.glob("reports"))


def test_declined_prompt_changes_nothing(mixed, envdoctor, offline, tmp_path):
    frozen = freeze(mixed)
    run = envdoctor("fix", "--mixed-wheels", "--python", str(mixed), "--apply", input="n\n", env=offline)
    assert run.returncode == 0, run
    assert "Carry out 1 step" in run.stderr and "nothing was changed" in run.stdout
    assert freeze(mixed) == frozen and not (tmp_path / "reports").exists()


def test_mixed_wheels_apply_verifies_and_rollback_restores_the_freeze(mixed, envdoctor, offline, tmp_path):
    frozen = freeze(mixed)
    assert "nvidia-cuda-runtime-cu11==11.7.99" in frozen and "nvidia-cuda-runtime-cu12==12.1.105" in frozen
    assert "wheels.mixed-cuda-families" in wheel_findings(envdoctor, mixed)
    run = envdoctor("fix", "--mixed-wheels", "--python", str(mixed), "--apply", "--yes", "--json", "-", env=offline)
    assert run.returncode == 0, run
    result = run.json()["result"]
    assert result["outcome"] == "applied", result
    assert result["verification"] == {"ok": True, "problems": [], "torch": {"version": "2.13.0+cpu", "cuda": None}}
    after = freeze(mixed)
    assert "nvidia-cuda-runtime" not in after and "torch==2.13.0+cpu" in after
    again = envdoctor("fix", "--mixed-wheels", "--python", str(mixed), "--format", "json").json()
    assert again["plan"]["applicable"] is False and again["plan"]["steps"][0]["reason"] == "no NVIDIA CUDA wheels are installed"
    assert wheel_findings(envdoctor, mixed) == []

    record = only_record(tmp_path / "reports")
    assert (record / "freeze.txt").read_text() == frozen
    saved = json.loads((record / "record.json").read_text())
    assert saved["outcome"]["outcome"] == "applied" and saved["plan"]["action"] == "mixed-wheels"
    assert {"nvidia-cuda-runtime-cu11", "torch"} <= {d["name"] for d in saved["distributions"]}

    undo = envdoctor("fix", "--rollback", str(record), "--python", str(mixed), "--yes", env=offline)
    assert undo.returncode == 0, undo
    assert "restored the environment" in undo.stdout
    assert freeze(mixed) == frozen


def test_a_pin_pip_cannot_install_is_refused_by_its_dry_run_before_anything_changes(mixed, envdoctor, offline, tmp_path):
    frozen = freeze(mixed)
    run = envdoctor("fix", "--pin-cuda", "13.0", "--python", str(mixed), "--apply", "--yes", "--format", "json", env=offline)
    assert run.returncode == 1, run
    document = run.json()
    assert document["plan"]["refusal"].startswith("pip finds no set of versions for the plan's install line")
    assert document["plan"]["steps"] == [] and document["result"]["outcome"] == "refused"
    assert freeze(mixed) == frozen and not (tmp_path / "reports").exists()


def test_failing_pin_rolls_back_to_the_exact_freeze(mixed, envdoctor, offline, tmp_path):
    frozen = freeze(mixed)
    # --offline: no dry run, so the install step itself fails and the rollback is what is watched
    run = envdoctor("fix", "--pin-cuda", "13.0", "--offline", "--python", str(mixed), "--apply", "--yes", "--format", "json", env=offline)
    assert run.returncode == 1, run
    document = run.json()
    steps = document["plan"]["steps"]
    assert steps[0]["argv"][-2:] == ["nvidia-cuda-runtime-cu11", "nvidia-cuda-runtime-cu12"]
    assert steps[2]["argv"][4:] == ["torch==2.14.1+cu130", "--index-url", "https://download.pytorch.org/whl/cu130"]
    result = document["result"]
    assert result["outcome"] == "rolled-back", result
    assert [r["ok"] for r in result["runs"]] == [True, False]
    assert result["rollback"]["outcome"] == "restored"
    assert [s["id"] for s in result["ladders"]["before"]][:3] == ["interpreter", "import_numpy", "import_torch"]
    assert "after" not in result["ladders"]
    assert freeze(mixed) == frozen
    assert "Successfully uninstalled nvidia-cuda-runtime-cu11" in run.stderr


def offline_target(python: Path, offline: dict, monkeypatch) -> tuple:
    """The venv's target facts and its pip, with this process kept off the network for what it runs."""
    for name, value in offline.items():
        monkeypatch.setenv(name, value)
    return gather(str(python), ("target",)), Installer("pip", str(python))


def test_apply_api_rolls_back_a_failing_step_of_a_planned_fix(mixed, offline, tmp_path, monkeypatch):
    frozen = freeze(mixed)
    facts, installer = offline_target(mixed, offline, monkeypatch)
    plan = plan_mixed_wheels(facts, installer)
    declined = applying.apply(plan, installer, facts["target"]["distributions"], tmp_path, lambda plan: False, lambda line: None)
    assert declined.outcome is applying.Outcome.DRY_RUN and not list(tmp_path.iterdir())

    broken = Step(StepKind.INSTALL, "Install a version that does not exist", "to fail", argv=installer.install(["nvidia-cuda-runtime-cu11==0.0.1"]))
    plan = type(plan)(**{**plan.__dict__, "steps": plan.steps[:1] + (broken,) + plan.steps[1:]})
    lines = []
    result = applying.apply(plan, installer, facts["target"]["distributions"], tmp_path, applying.always, lines.append)
    assert result.outcome is applying.Outcome.ROLLED_BACK, result
    assert result.message.startswith("step 2 (Install a version that does not exist) exited with 1")
    assert any("No matching distribution found for nvidia-cuda-runtime-cu11==0.0.1" in line for line in lines)
    assert freeze(mixed) == frozen
    assert records.load(result.record).outcome["outcome"] == "rolled-back"


def ladder_plan(facts: dict, installer: Installer):
    """The mixed-wheels plan, asking for the ladder before and after like a pin-cuda plan does."""
    plan = plan_mixed_wheels(facts, installer)
    return replace(plan, expect=replace(plan.expect, ladder=True))


def test_apply_runs_the_ladder_before_and_after_and_records_both(mixed, offline, tmp_path, monkeypatch):
    facts, installer = offline_target(mixed, offline, monkeypatch)
    result = applying.apply(ladder_plan(facts, installer), installer, facts["target"]["distributions"], tmp_path, applying.always, lambda line: None)
    assert result.outcome is applying.Outcome.APPLIED, result
    for when in ("before", "after"):
        stages = {s["id"]: s["status"] for s in result.ladders[when]}
        assert stages["import_torch"] == "passed" and stages["cpu_ops"] == "passed" and stages["import_sb3"] == "skipped"
    assert records.load(result.record).outcome["ladders"]["after"] == [dict(s) for s in result.ladders["after"]]


def test_a_stage_that_passed_before_and_fails_after_rolls_the_fix_back(mixed, offline, tmp_path, monkeypatch):
    frozen = freeze(mixed)
    facts, installer = offline_target(mixed, offline, monkeypatch)
    seen = []

    def ladder(python: str) -> tuple:
        """The stack as it was, then sb3_contrib gone: what an unresolved pin used to leave."""
        seen.append(python)
        status = "passed" if len(seen) == 1 else "skipped"
        return ({"id": "import_torch", "title": "import torch", "status": "passed", "reason": None},
                {"id": "import_sb3_contrib", "title": "import sb3_contrib", "status": status, "reason": None if status == "passed" else "sb3_contrib is not installed"})

    result = applying.apply(ladder_plan(facts, installer), installer, facts["target"]["distributions"], tmp_path, applying.always, lambda line: None, ladder)
    assert result.outcome is applying.Outcome.ROLLED_BACK, result
    assert result.message.startswith("the probe ladder got worse: import sb3_contrib passed before the fix and is skipped after it (sb3_contrib is not installed)")
    assert seen == [str(mixed), str(mixed)] and freeze(mixed) == frozen
    saved = records.load(result.record).outcome
    assert saved["outcome"] == "rolled-back" and saved["ladders"]["before"][1]["status"] == "passed"


def uv_freeze(python: Path) -> str:
    uv = Path(sys.executable).with_name("uv")
    return subprocess.run([str(uv), "pip", "freeze", "--python", str(python)], capture_output=True, text=True, check=True).stdout


def test_uv_installer_applies_and_rolls_back(venvs, envdoctor, wheel_dir, tmp_path):
    """A venv without pip is fixed with uv (found on PATH), offline from the local wheel folder."""
    python = venvs.get("fix-uv", ["--find-links", str(wheel_dir), *(f"{n}=={v}" for n, v in WHEELS.items())])
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "UV_OFFLINE": "1", "UV_FIND_LINKS": str(wheel_dir)}
    frozen = uv_freeze(python)
    assert "nvidia-cuda-runtime-cu11==11.7.99\nnvidia-cuda-runtime-cu12==12.1.105\n" in frozen
    run = envdoctor("fix", "--mixed-wheels", "--python", str(python), "--apply", "--yes", "--json", "-", env=env)
    assert run.returncode == 0, run
    document = run.json()
    assert document["plan"]["installer"] == "uv"
    uninstall = document["plan"]["steps"][0]["argv"]
    assert Path(uninstall[0]).name == "uv" and uninstall[1:] == ["pip", "uninstall", "--python", str(python), "nvidia-cuda-runtime-cu11", "nvidia-cuda-runtime-cu12"]
    assert document["result"]["outcome"] == "applied"
    assert uv_freeze(python) == frozen.replace("nvidia-cuda-runtime-cu11==11.7.99\nnvidia-cuda-runtime-cu12==12.1.105\n", "")
    undo = envdoctor("fix", "--rollback", str(only_record(tmp_path / "reports")), "--python", str(python), "--yes", env=env)
    assert undo.returncode == 0, undo
    assert uv_freeze(python) == frozen


INTERRUPTED_APPLY = """
import sys
from pathlib import Path
from envdoctor.fix import apply as applying
from envdoctor.fix.inputs import gather
from envdoctor.fix.installer import Installer
from envdoctor.fix.mixed_wheels import plan_mixed_wheels
from envdoctor.fix.plan import Step, StepKind

python, uv, report_dir = sys.argv[1:]
facts = gather(python, ("target",))
installer = Installer("uv", python, uv)
plan = plan_mixed_wheels(facts, installer)
hang = Step(StepKind.INSTALL, "Hang", "to be interrupted", argv=(sys.executable, "-c", "import time; print('hanging', flush=True); time.sleep(600)  # " + report_dir))
plan = type(plan)(**{**plan.__dict__, "steps": plan.steps[:1] + (hang,) + plan.steps[1:]})
result = applying.apply(plan, installer, facts["target"]["distributions"], Path(report_dir), applying.always, lambda line: print(line, flush=True))
print("OUTCOME", result.outcome.value, result.message, flush=True)
"""


def test_ctrl_c_during_a_step_kills_it_and_rolls_back(venvs, wheel_dir, tmp_path):
    python = venvs.get("fix-interrupt", ["--find-links", str(wheel_dir), *(f"{n}=={v}" for n, v in WHEELS.items())])
    frozen = uv_freeze(python)
    uv = Path(sys.executable).with_name("uv")
    env = {**os.environ, "UV_OFFLINE": "1", "UV_FIND_LINKS": str(wheel_dir)}
    child = subprocess.Popen([sys.executable, "-c", INTERRUPTED_APPLY, str(python), str(uv), str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env, preexec_fn=interruptible)
    for line in child.stdout:
        if line.strip() == "hanging":
            assert "nvidia-cuda-runtime" not in uv_freeze(python)
            child.send_signal(signal.SIGINT)
            break
    rest = child.stdout.read()
    assert child.wait(timeout=120) == 0
    assert "OUTCOME rolled-back step 2 (Hang) was interrupted" in rest
    assert uv_freeze(python) == frozen
    assert f"time.sleep(600)  # {tmp_path}" not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
