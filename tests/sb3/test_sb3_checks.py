"""The sb3 checks as pure functions over recorded facts, and the target script that feeds them."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy

from envdoctor.checks import sb3 as checks
from envdoctor.collect.target import run_target_script
from envdoctor.sb3.forensics import inspect_model
from conftest import REPO

SYSTEM_INFO = "- Python: 3.11.7\n- Stable-Baselines3: 2.9.2\n- PyTorch: 2.13.0+cpu\n- Numpy: 2.4.6\n- Gymnasium: 1.4.0\n"


def numpy_model(tmp_path: Path) -> Path:
    """A hand-made model whose `_last_obs` is a real NumPy 2 array pickle (numpy._core)."""
    import base64
    import pickle

    data = {"_last_obs": {":type:": "<class 'numpy.ndarray'>", ":serialized:": base64.b64encode(pickle.dumps(numpy.zeros(3))).decode()}}
    path = tmp_path / "np.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps(data, indent=4))
        archive.writestr("system_info.txt", SYSTEM_INFO)
    return path


def facts_for(model: Path, versions: dict, modules: dict = None) -> dict:
    target = {"python": {"version": "3.11.7"}, "opcodes": [], "modules": modules or {}, "versions": versions}
    return {"models": {"files": [inspect_model(model)], "target": target}}


def test_numpy2_model_on_numpy1_is_an_error(tmp_path):
    facts = facts_for(numpy_model(tmp_path), {"numpy": "1.26.4"}, {"numpy._core.numeric": False, "numpy": True})
    [finding] = checks.numpy_major(facts)
    assert finding.severity.value == "error" and "NumPy 2" in finding.title
    assert list(checks.missing_module(facts)) == []  # numpy-major tells it; not twice


def test_same_numpy_major_is_fine(tmp_path):
    assert list(checks.numpy_major(facts_for(numpy_model(tmp_path), {"numpy": "2.1.0"}))) == []


def test_missing_numpy_altogether_is_a_missing_module(tmp_path):
    facts = facts_for(numpy_model(tmp_path), {"numpy": None}, {"numpy._core.numeric": False, "numpy": False})
    [finding] = checks.missing_module(facts)
    assert any(r.command and r.command.endswith("-m pip install numpy") for r in finding.remedies)  # the target's own pip


def test_version_drift_names_what_differs(tmp_path):
    facts = facts_for(numpy_model(tmp_path), {"numpy": "2.4.6", "stable-baselines3": "2.3.0", "torch": "2.13.0", "gymnasium": "1.4.0"})
    [finding] = checks.version_drift(facts)
    assert finding.severity.value == "info" and "SB3 2.9.2 (here 2.3.0)" in finding.title and "torch" not in finding.title


def test_target_script_finds_modules_without_importing_them():
    repo = REPO
    argv = [sys.executable, "-X", "importtime", "-c", (repo / "envdoctor/target/sb3_target.py").read_text(), json.dumps(["numpy._core.numeric", "sb3_contrib.common.maskable.policies", "no_such_module.x"])]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=repo, check=True)
    result = json.loads(done.stdout)
    assert result["modules"] == {"numpy._core.numeric": True, "sb3_contrib.common.maskable.policies": True, "no_such_module.x": False}
    imported = [line.split("|")[-1].strip() for line in done.stderr.splitlines()]
    assert not [name for name in imported if name.split(".")[0] in ("numpy", "sb3_contrib", "torch")]


def test_target_script_runs_on_python_38(venvs):
    python = venvs.get("bare-3.8", interpreter=str(sorted(Path(subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()).glob("versions/3.8.*/bin/python3.8"))[-1]))
    result = run_target_script(str(python), "sb3_target", json.dumps(["collections", "numpy"]))
    assert result["python"]["version_info"][:2] == [3, 8] and result["modules"] == {"collections": True, "numpy": False}
