"""inspect / sanitize / check --model on real SB3 models, with what really happens when each is loaded.

Models are saved once per session by the real SB3 in a child process (tests/data/sb3/make_models.py);
foreign-Python payloads are cloudpickled by pyenv's 3.8, 3.12 and 3.13 in light venvs holding only
cloudpickle (tests/data/sb3/make_foreign.py) and spliced into a real model. The ground truth is
tests/data/sb3/load_model.py run in a child process: the doctor itself never unpickles anything. Each load
is a child forked by tests/data/sb3/load_server.py, which imports torch and SB3 once for the whole module.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import TEST_DATA, run_envdoctor

DATA = TEST_DATA / "sb3"

pytestmark = pytest.mark.slow


class Loader:
    """The load server, one process for the module: each load in a forked child of it, the ground truth."""

    def __init__(self, log: Path):
        self.log = log.open("w")
        self.server = subprocess.Popen([sys.executable, str(DATA / "load_server.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True)

    def __call__(self, model: Path, algo: str = "MaskablePPO", custom: dict = None, learn: bool = False) -> subprocess.CompletedProcess:
        """The real SB3 load (and predict, optionally learn) of `model`, as `python load_model.py ...` would do it."""
        argv = [algo, str(model)]
        argv += [json.dumps(custom)] if custom is not None else []
        argv += ["--learn"] if learn else []
        self.server.stdin.write(json.dumps({"argv": argv, "timeout": 300}) + "\n")
        self.server.stdin.flush()
        answer = self.server.stdout.readline()
        assert answer, f"the load server ended: {Path(self.log.name).read_text()[-3000:]}"
        done = json.loads(answer)
        if done["timed_out"]:
            raise subprocess.TimeoutExpired([str(DATA / "load_model.py"), *argv], 300)
        return subprocess.CompletedProcess([str(DATA / "load_model.py"), *argv], done["returncode"], done["stdout"], done["stderr"])

    def close(self) -> None:
        self.server.stdin.close()
        self.server.wait(timeout=60)
        self.log.close()


@pytest.fixture(scope="module")
def load(tmp_path_factory):
    loader = Loader(tmp_path_factory.mktemp("load-server") / "stderr.log")
    yield loader
    loader.close()


def result(completed: subprocess.CompletedProcess) -> dict:
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


def inspect(model: Path, *args: str) -> tuple:
    run = run_envdoctor("inspect", str(model), "--json", "-", *args)
    assert run.returncode in (0, 1), run
    report = run.json()
    return run, report, report["facts"]["models"]["files"][0]


def findings(report: dict, check_id: str) -> list:
    return [f for f in report["findings"] if f["id"] == check_id]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def custom_objects(model_facts: dict) -> dict:
    return {key: plan["value"] for key, plan in model_facts["schedules"].items()}


def test_own_closure_model_contains_code_a_warning_never_safe_and_really_loads(models, load):
    run, report, facts = inspect(models["mppo_closure"])
    entries = {e["key"]: e for e in facts["entries"]}
    assert run.returncode == 0 and [(f["id"], f["severity"]) for f in report["findings"]] == [("sb3.contains-code", "warning")]
    assert "contains 3 pickled functions (learning_rate, clip_range, lr_schedule)" in report["findings"][0]["title"]
    assert entries["learning_rate"]["verdict"] == "code"
    function = entries["learning_rate"]["functions"][0]
    assert function["qualname"] == "linear_schedule.<locals>.func"
    assert function["closure"] == [0.0003] and function["producer_minor"] == "3.11"
    assert function["filename"].endswith("make_models.py") or function["filename"] == "<dynamic-code>"  # cloudpickle 3.1.3 drops it
    assert entries["observation_space"]["verdict"] == "data" and entries["observation_space"]["numpy_major"] == 2
    assert facts["producer"] == {**facts["producer"], "system_info_python": "3.11.7", "consistent": True}
    assert result(load(models["mppo_closure"]))["clip_range"] == 0.1


def test_foreign_312_model_is_flagged_and_really_segfaults_in_training(models, load):
    run, report, facts = inspect(models["foreign_py312"])
    [finding] = findings(report, "sb3.foreign-bytecode")
    assert run.returncode == 1 and finding["severity"] == "error"
    assert "3.12" in finding["title"] and "during training" in finding["explanation"]
    clip = next(e for e in facts["entries"] if e["key"] == "clip_range")["functions"][0]
    assert clip["bytecode_candidates"] == ["3.12"] and clip["system_info_agrees"]
    assert "MaskablePPO.load(" in finding["remedies"][0]["command"] and "envdoctor sanitize" in finding["remedies"][1]["command"]
    assert load(models["foreign_py312"], learn=True).returncode < 0  # killed by a signal inside train()
    assert result(load(models["foreign_py312"], custom=custom_objects(facts), learn=True))["learned"]


def test_foreign_313_model_really_segfaults_while_loading(models, load):
    _, report, facts = inspect(models["foreign_py313"])
    [finding] = findings(report, "sb3.foreign-bytecode")
    assert finding["severity"] == "error" and "while loading" in finding["explanation"]
    assert facts["producer"]["code_minors"] == ["3.13"]
    assert load(models["foreign_py313"]).returncode < 0
    assert result(load(models["foreign_py313"], custom=custom_objects(facts)))["lr"] == 0.0003


def test_foreign_38_model_is_silently_dropped_by_sb3(models, load):
    _, report, facts = inspect(models["foreign_py38"])
    [finding] = findings(report, "sb3.foreign-bytecode")
    assert finding["severity"] == "warning" and "silently" in finding["title"]
    assert {f["layout"] for e in facts["entries"] for f in e["functions"]} == {"3.8–3.10"}
    loaded = result(load(models["foreign_py38"]))
    assert loaded["clip_range"] == 0.2 and loaded["warnings"]  # the saved 0.1 is lost, as the finding says


def test_schedule_from_a_module_missing_here_is_flagged_and_really_raises(models, load):
    _, report, facts = inspect(models["mppo_byref"])
    [finding] = findings(report, "sb3.missing-module")
    assert "sb3_fixture_schedules" in finding["title"]
    completed = load(models["mppo_byref"])
    assert completed.returncode == 1 and "No module named 'sb3_fixture_schedules'" in completed.stderr
    assert result(load(models["mppo_byref"], custom=custom_objects(facts)))["lr"] == 0.0003


def test_dangerous_model_is_flagged_and_never_run_by_the_doctor(models, tmp_path, load):
    marker = models["dangerous"].parent / "PWNED"
    _, report, facts = inspect(models["dangerous"])
    [finding] = findings(report, "sb3.dangerous-pickle")
    assert finding["severity"] == "error" and "system" in finding["explanation"]
    out = tmp_path / "clean.zip"
    assert run_envdoctor("sanitize", str(models["dangerous"]), "-o", str(out)).returncode == 0
    assert result(load(out))["lr"] == 0.0003
    assert not marker.exists()
    load(models["dangerous"])  # the real load runs the payload: proof that it was live
    assert marker.exists()


def test_corrupt_entry_is_reported_not_an_input_error(models, load):
    run, report, _ = inspect(models["corrupt"])
    [finding] = findings(report, "sb3.corrupt-entry")
    assert run.returncode == 1 and "learning_rate" in finding["title"]
    assert load(models["corrupt"]).returncode == 1


@pytest.mark.parametrize("name, algo", [
    ("mppo_closure", "MaskablePPO"), ("ppo_closure", "PPO"), ("foreign_py312", "MaskablePPO"), ("foreign_py313", "MaskablePPO"),
    ("foreign_py38", "MaskablePPO"), ("mppo_byref", "MaskablePPO"), ("corrupt", "MaskablePPO"), ("mppo_plain", "MaskablePPO"),
])
def test_sanitized_copy_loads_plainly_and_predicts_like_the_original(models, tmp_path, name, algo, load):
    source = models[name]
    before = sha256(source)
    _, _, facts = inspect(source)
    out = tmp_path / "out.zip"
    run = run_envdoctor("sanitize", str(source), "-o", str(out))
    assert run.returncode == 0, run
    sanitized = result(load(out, algo))
    reference = result(load(source, algo, custom=custom_objects(facts)))
    assert sanitized["actions"] == reference["actions"]
    assert sha256(source) == before
    with zipfile.ZipFile(source) as a, zipfile.ZipFile(out) as b:
        assert [n for n in b.namelist() if n != "envdoctor_sanitized.json"] == a.namelist()
        assert all(a.read(n) == b.read(n) for n in a.namelist() if n != "data")
        audit = json.loads(b.read("envdoctor_sanitized.json"))
        data = json.loads(b.read("data"))
    assert audit["source_sha256"] == before
    assert {k: v["value"] for k, v in audit["replaced"].items()} == custom_objects(facts)
    assert all(not isinstance(data[k], dict) for k in audit["replaced"])
    if "clip_range" in audit["replaced"] and algo == "MaskablePPO":
        assert sanitized["clip_range"] == audit["replaced"]["clip_range"]["value"]


def test_sanitize_reports_where_numbers_came_from_and_honours_options(models, tmp_path, load):
    out = tmp_path / "ppo.zip"
    run = run_envdoctor("sanitize", str(models["ppo_closure"]), "-o", str(out), "--clip-range", "0.3")
    assert run.returncode == 0, run
    assert "clip_range: code → 0.3 (given with --clip-range)" in run.stdout
    assert "clip_range_vf: code → 0.5 (constant found" in run.stdout
    assert "learning_rate: code → 0.001 (constant found" in run.stdout
    assert result(load(out, "PPO"))["clip_range"] == 0.3


def test_sanitize_refuses_existing_output_without_force(models, tmp_path):
    out = tmp_path / "out.zip"
    out.write_bytes(b"keep me")
    run = run_envdoctor("sanitize", str(models["mppo_closure"]), "-o", str(out))
    assert run.returncode == 2 and "--force" in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert out.read_bytes() == b"keep me"
    assert run_envdoctor("sanitize", str(models["mppo_closure"]), "-o", str(out), "--force").returncode == 0
    assert zipfile.is_zipfile(out)


def test_sanitize_refuses_code_in_policy_kwargs(models, tmp_path):
    out = tmp_path / "out.zip"
    run = run_envdoctor("sanitize", str(models["mppo_custom_extractor"]), "-o", str(out))
    assert run.returncode == 2 and "policy_kwargs" in run.stderr and "TinyExtractor" in run.stderr
    assert not out.exists()


def test_check_with_model_adds_its_findings_to_the_environment_report(models, envdoctor, tmp_path):
    run = envdoctor("check", "--no-probe", "--only", "sb3", "--model", str(models["foreign_py313"]), "--json", "-", "--no-save")
    assert run.returncode == 1, run
    report = run.json()
    assert report["facts"]["models"]["files"][0]["path"].endswith("foreign_py313.zip")
    assert sorted(f["id"] for f in report["findings"]) == ["sb3.contains-code", "sb3.foreign-bytecode"]
    recorded = tmp_path / "recorded.json"
    recorded.write_text(run.stdout)
    rejudged = envdoctor("check", "--from", str(recorded), "--only", "sb3", "--json", "-", "--no-save")
    assert sorted(f["id"] for f in rejudged.json()["findings"]) == ["sb3.contains-code", "sb3.foreign-bytecode"]
