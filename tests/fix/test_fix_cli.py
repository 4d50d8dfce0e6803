"""`envdoctor fix` through the real CLI: plans from recorded facts (`--from`), output formats, bad usage."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import REPO, write_host_root

DATA = REPO / "tests" / "data" / "fix"
SEED = DATA / "seed-py38-torch231-cu121.json"
OLD_DRIVER = DATA / "driver-470-k80.json"


def test_seed_plan_as_a_shell_script(envdoctor):
    run = envdoctor("fix", "--pin-cuda", "11.6", "--from", str(SEED), "--format", "sh", child=True)  # the command's wiring in a real `python -m envdoctor`
    assert run.returncode == 0, run
    assert run.stdout == (DATA / "seed-pin-11.6.sh").read_text()


def test_seed_plan_as_json(envdoctor):
    run = envdoctor("fix", "--pin-cuda", "11.6", "--from", str(SEED), "--json", "-")
    assert run.returncode == 0, run
    document = run.json()
    plan = document["plan"]
    assert document["result"] is None
    assert plan["applicable"] and plan["refusal"] is None
    assert [(s["number"], s["kind"], s["status"]) for s in plan["steps"]] == [
        (1, "uninstall", "planned"), (2, "uninstall", "skipped"), (3, "install", "planned"), (4, "verify", "planned"), (5, "verify", "planned"),
    ]
    assert plan["steps"][2]["command"] == (
        "/envs/seed/bin/python -m pip install torch==1.13.1+cu116 torchvision==0.14.1+cu116 torchaudio==0.13.1+cu116 "
        "--extra-index-url https://download.pytorch.org/whl/cu116"
    )


def test_text_plan_says_nothing_changed(envdoctor, tmp_path):
    run = envdoctor("fix", "--pin-cuda", "11.6", "--from", str(SEED), "--json", str(tmp_path / "plan.json"))
    assert run.returncode == 0, run
    assert run.stdout.startswith("Plan: Pin torch to CUDA 11.6: torch 1.13.1+cu116 for Python 3.8\n")
    assert " 3. [planned] Install torch==1.13.1+cu116 torchvision==0.14.1+cu116 torchaudio==0.13.1+cu116\n" in run.stdout
    assert run.stdout.endswith("Nothing was changed. Run again with --apply to carry out the plan.\n")
    assert json.loads((tmp_path / "plan.json").read_text())["plan"]["action"] == "pin-cuda"


def test_old_driver_is_refused_with_the_driver_needed(envdoctor):
    run = envdoctor("fix", "--pin-cuda", "12.1", "--from", str(OLD_DRIVER))
    assert run.returncode == 1, run
    assert "REFUSED: driver 470.57.02 is too old for CUDA 12.1: it needs driver ≥ 525.60.13" in run.stdout
    script = envdoctor("fix", "--pin-cuda", "12.1", "--from", str(OLD_DRIVER), "--format", "sh").stdout
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
    assert done.returncode == 1 and "envdoctor: refused: driver 470.57.02" in done.stderr


def test_force_plans_past_driver_and_gpu(envdoctor):
    plan = envdoctor("fix", "--pin-cuda", "12.1", "--force", "--from", str(OLD_DRIVER), "--format", "json").json()["plan"]
    assert plan["applicable"]
    assert any("Tesla K80 (compute capability 3.7) has no kernels in torch 2.4.1+cu121" in n for n in plan["notes"])


def test_threads_script_sets_the_usable_cpus_in_a_live_shell(envdoctor, tmp_path):
    root = write_host_root(tmp_path / "root", {"/proc/cpuinfo": "".join(f"processor\t: {n}\nflags\t\t: avx avx2\n\n" for n in range(6))})
    run = envdoctor("fix", "--threads", "--format", "sh", env={"ENVDOCTOR_ROOT": str(root), "OMP_NUM_THREADS": "64"}, unset=("MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"))
    assert run.returncode == 0, run
    assert "set -e" not in run.stdout
    shell = subprocess.run(["sh", "-c", 'eval "$1"; echo "$OMP_NUM_THREADS $MKL_NUM_THREADS $OPENBLAS_NUM_THREADS"', "sh", run.stdout], capture_output=True, text=True)
    assert shell.stdout == "6 6 6\n"


@pytest.mark.parametrize("args,message", [
    ((), "choose one of --pin-cuda X.Y, --mixed-wheels, --threads or --rollback RECORD"),
    (("--threads", "--mixed-wheels"), "choose one of"),
    (("--pin-cuda", "9.9", "--from", str(SEED)), "--pin-cuda 9.9: torch has wheels for CUDA 10.2, 11.3, 11.6"),
    (("--pin-cuda", "12.1", "--torch", "2.3.0", "--from", str(SEED)), "ask for 2.3.1"),
    (("--mixed-wheels", "--torch", "2.3"), "--torch, --with, --force, --wheels and --offline go with --pin-cuda"),
    (("--threads", "--offline"), "--torch, --with, --force, --wheels and --offline go with --pin-cuda"),
    (("--pin-cuda", "11.6", "--wheels", "/nonexistent/wheels", "--from", str(SEED)), "--wheels /nonexistent/wheels: not a folder"),
    (("--pin-cuda", "11.6", "--from", str(SEED), "--apply"), "cannot apply a plan made for a recorded report"),
    (("--threads", "--apply"), "--threads changes no files"),
    (("--rollback", "/nonexistent/record"), "cannot read the record /nonexistent/record"),
    (("--rollback", str(SEED)), "is not an envdoctor fix record"),
    (("--pin-cuda", "11.6", "--installer", "uv", "--from", str(SEED)), "--installer uv: uv is not available for /envs/seed/bin/python"),
])
def test_bad_usage_is_one_line_and_exit_2(envdoctor, args, message):
    run = envdoctor("fix", *args)
    assert run.returncode == 2, run
    assert message in run.stderr and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_target_without_an_installer_is_a_usage_error(envdoctor, venvs):
    bare = venvs.get("fix-bare")
    run = envdoctor("fix", "--mixed-wheels", "--python", str(bare))
    assert run.returncode == 2, run
    assert "has neither pip nor uv" in run.stderr
