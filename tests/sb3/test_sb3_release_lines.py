"""Genuine models of older SB3 release lines: never dangerous, and a sanitised copy that predicts as the original.

`scripts/sb3-corpus --judge` checks every release line from 1.8 on; the models here are real ones it saved, kept
as files because the older lines do not install beside the test venv's SB3. Each pins a cause that line found.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import pytest

from conftest import TEST_DATA, run_envdoctor
from helpers.sanitised import assert_sanitised_copy

SAVED = TEST_DATA / "sb3" / "saved"
# sb3-contrib 2.0.0's ARS("LinearPolicy", IdentityEnvBox(ep_length=4), n_delta=2, seed=0).learn(32), saved by
# scripts/sb3-corpus on Python 3.11: its delta_std_schedule is get_schedule_fn's constant_fn closure, by value.
ARS_2_0 = SAVED / "ARS-linear_floats-sb3-contrib-2.0.0.zip"
LOAD_ARS = TEST_DATA / "sb3" / "load_ars.py"


def test_ars_noise_closure_of_sb3_2_0_contains_code_and_is_not_dangerous():
    run = run_envdoctor("inspect", str(ARS_2_0), "--json", "-")
    assert run.returncode == 0, run
    entries = {e["key"]: e for e in run.json()["facts"]["models"]["files"][0]["entries"]}
    assert entries["delta_std_schedule"]["verdict"] == "code"
    assert entries["delta_std_schedule"]["functions"][0]["qualname"] == "constant_fn.<locals>.func"
    assert "dangerous" not in {e["verdict"] for e in entries.values()}


@pytest.mark.slow
def test_ars_of_sb3_2_0_is_sanitised_without_its_noise_closure_and_predicts_as_the_original(tmp_path):
    copy = tmp_path / "copy.zip"
    run = run_envdoctor("sanitize", str(ARS_2_0), "-o", str(copy))
    assert run.returncode == 0, run
    assert_sanitised_copy(copy)
    with zipfile.ZipFile(copy) as archive:
        assert "delta_std_schedule" not in json.loads(archive.read("data"))
        dropped = json.loads(archive.read("envdoctor_sanitized.json"))["dropped"]
    assert dropped["delta_std_schedule"].startswith("code: ARS keeps the one its __init__ makes at load")
    loaded = subprocess.run([sys.executable, str(LOAD_ARS), str(ARS_2_0), str(copy)], capture_output=True, text=True,
                            cwd=LOAD_ARS.parent, timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    result = json.loads(loaded.stdout.strip().splitlines()[-1])
    original, sanitised = result[str(ARS_2_0)], result[str(copy)]
    assert sanitised["actions"] == original["actions"]
    assert sanitised["delta_std"] == original["delta_std"] == 0.05  # trained with ARS's default, as saved
