"""`envdoctor check --policy POLICY.toml`: a team's rules judged as policy.* findings, a bad file
refused in one line naming its key before anything runs."""

import copy
from pathlib import Path

import pytest

from conftest import REPO, changed_report, findings_by_id, run_envdoctor
from envdoctor import policy

REPORTS = REPO / "tests" / "data" / "reports"
GIB = 2**30
FULL_POLICY = """
[torch]
builds = ["2.13.0+cu130", "2.12.1+cu128"]
remedy = "module load pytorch/2.13"

[driver]
min_version = "580.65.06"

[env]
required = ["NCCL_SOCKET_IFNAME", "MASTER_PORT=29500"]
forbidden = ["LD_PRELOAD", "CUDA_LAUNCH_BLOCKING=1"]
severity = "warning"

[memory]
min_free_vram_gb = 60
min_available_ram_gb = 64
min_free_shm_gb = 8

[packages]
severity = "info"

[packages.require]
numpy = ">=2.3,<3"
stable-baselines3 = ">=2.7"
"""
COMPLIANT = {
    "environ": {"variables": {"NCCL_SOCKET_IFNAME": "ib0", "MASTER_PORT": "29500", "CUDA_LAUNCH_BLOCKING": "0"}},
    "memory": {"ram_total_bytes": 256 * GIB, "ram_available_bytes": 200 * GIB, "swap_total_bytes": 0, "shm_total_bytes": 64 * GIB, "shm_free_bytes": 64 * GIB},
    "gpu": {"source": "nvml", "driver": {"version": "580.65.06", "cuda": "13.0"}, "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_free_bytes": 79 * GIB}]},
}


@pytest.fixture
def policy_file(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text(FULL_POLICY, encoding="utf-8")
    return path


def node(tmp_path, change):
    """The H100 report with the compliant facts, then `change(facts)` applied."""

    def changed(facts):
        facts.update(copy.deepcopy(COMPLIANT))
        change(facts)

    return changed_report(REPORTS / "h100-cu130.json", tmp_path / "node.json", changed)


def checked_against_policy(tmp_path, policy_file, change=lambda facts: None, *options):
    run = run_envdoctor("check", "--from", str(node(tmp_path, change)), "--policy", str(policy_file), "--only", "policy", "--json", "-", *options)
    assert run.returncode in (0, 1), run
    return run


def test_a_compliant_node_passes_every_rule_of_the_policy(tmp_path, policy_file):
    run = checked_against_policy(tmp_path, policy_file)
    assert run.returncode == 0, run
    checks = {c["id"]: c["status"] for c in run.json()["checks"]}
    assert checks == dict.fromkeys(["policy.torch-build", "policy.driver", "policy.env-required", "policy.env-forbidden", "policy.vram", "policy.ram", "policy.shm", "policy.package"], "passed")


def breaches():
    """(change to the compliant facts, the finding id, its severity from the file, its title)."""
    yield lambda f: f["target"]["torch_build"].update(version="2.13.0+cpu"), "policy.torch-build", "error", "torch 2.13.0+cpu is installed; the policy allows 2.13.0+cu130 or 2.12.1+cu128"
    yield lambda f: f["gpu"]["driver"].update(version="575.57.08"), "policy.driver", "error", "NVIDIA driver 575.57.08 is installed; the policy requires 580.65.06 or newer"
    yield lambda f: f["gpu"].update(driver=None), "policy.driver", "error", "No NVIDIA driver was found; the policy requires 580.65.06 or newer"
    yield lambda f: f["environ"]["variables"].pop("NCCL_SOCKET_IFNAME"), "policy.env-required", "warning", "NCCL_SOCKET_IFNAME is not set; the policy requires it"
    yield lambda f: f["environ"]["variables"].update(MASTER_PORT="6000"), "policy.env-required", "warning", "MASTER_PORT is '6000'; the policy requires MASTER_PORT=29500"
    yield lambda f: f["environ"]["variables"].update(LD_PRELOAD="/lib/libjemalloc.so"), "policy.env-forbidden", "warning", "LD_PRELOAD is set to '/lib/libjemalloc.so'; the policy forbids LD_PRELOAD"
    yield lambda f: f["environ"]["variables"].update(CUDA_LAUNCH_BLOCKING="1"), "policy.env-forbidden", "warning", "CUDA_LAUNCH_BLOCKING is set to '1'; the policy forbids CUDA_LAUNCH_BLOCKING=1"
    yield lambda f: f["gpu"]["gpus"][0].update(memory_free_bytes=10 * GIB), "policy.vram", "error", "GPU 0 (NVIDIA H100 80GB HBM3) has 10.0 GiB of memory free; the policy requires 60 GiB"
    yield lambda f: f["memory"].update(ram_available_bytes=32 * GIB), "policy.ram", "error", "32.0 GiB of RAM is available; the policy requires 64 GiB"
    yield lambda f: f["memory"].update(shm_free_bytes=GIB // 2), "policy.shm", "error", "/dev/shm has 0.5 GiB free; the policy requires 8 GiB"
    yield lambda f: f["target"]["distributions"].pop(1), "policy.package", "info", "numpy is not installed; the policy requires numpy>=2.3,<3"
    yield lambda f: f["target"]["distributions"][3].update(version="2.3.0"), "policy.package", "info", "stable-baselines3 2.3.0 is installed; the policy requires stable-baselines3>=2.7"


@pytest.mark.parametrize("change,id,severity,title", list(breaches()), ids=[title for *_, title in breaches()])
def test_each_breach_is_a_policy_finding_with_the_files_severity_and_a_remedy(tmp_path, policy_file, change, id, severity, title):
    run = checked_against_policy(tmp_path, policy_file, change)
    (finding,) = run.json()["findings"]
    assert (finding["id"], finding["severity"], finding["title"]) == (id, severity, title)
    assert finding["remedies"] and finding["evidence"]["policy"] == str(policy_file)
    assert run.returncode == (1 if severity == "error" else 0)


def test_the_teams_remedy_comes_first_then_the_exact_command(tmp_path, policy_file):
    run = checked_against_policy(tmp_path, policy_file, lambda f: f["target"]["torch_build"].update(version="2.13.0+cpu"))
    (finding,) = findings_by_id(run.json())["policy.torch-build"]
    assert [r["command"] for r in finding["remedies"]] == [None, "/opt/venv/bin/python -m pip install torch==2.13.0+cu130 --index-url https://download.pytorch.org/whl/cu130"]
    assert finding["remedies"][0]["summary"] == "module load pytorch/2.13"


def test_a_rule_whose_facts_are_missing_is_skipped_or_unjudged_never_passed(policy_file):
    run = run_envdoctor("check", "--from", str(REPORTS / "gpu-collector-failed.json"), "--policy", str(policy_file), "--only", "policy", "--json", "-")
    report = run.json()
    checks = {c["id"]: c["status"] for c in report["checks"]}
    assert checks["policy.driver"] == checks["policy.vram"] == checks["policy.ram"] == "skipped"  # gpu failed, no memory section
    run = run_envdoctor("check", "--from", str(REPORTS / "h100-cu130.json"), "--policy", str(policy_file), "--only", "policy.vram", "--json", "-")
    (unjudged,) = findings_by_id(run.json())["policy.vram"]
    assert unjudged["severity"] == "info" and "was not recorded" in unjudged["title"]


def test_a_rule_that_crashes_on_odd_facts_is_a_visible_finding(tmp_path, policy_file):
    run = checked_against_policy(tmp_path, policy_file, lambda f: f["gpu"].update(driver="580.65.06"))
    (crash,) = findings_by_id(run.json())["doctor.check-crashed"]
    assert crash["evidence"]["check"] == "policy.driver"


def test_skip_and_only_select_policy_rules_like_any_check(tmp_path, policy_file):
    run = checked_against_policy(tmp_path, policy_file, lambda f: f["environ"]["variables"].clear(), "--skip", "policy.env-required")
    assert {c["id"] for c in run.json()["checks"]} == {"policy.torch-build", "policy.driver", "policy.env-forbidden", "policy.vram", "policy.ram", "policy.shm", "policy.package"}
    assert run.returncode == 0


def test_judge_is_a_pure_function_of_a_reports_facts(tmp_path, policy_file):
    facts = {**copy.deepcopy(COMPLIANT), "target": {"distributions": [], "torch_build": None}}
    findings = policy.judge(policy.load(policy_file), facts)
    assert [f.id for f in findings] == ["policy.torch-build", "policy.package", "policy.package"]


def bad_policies():
    """(policy text, the key the refusal names and why)."""
    yield "[torch]\nbuilds = \"2.5.1\"\n", "torch.builds: must be a list of strings"
    yield "[torch]\nbuilds = []\n", "torch.builds: names no build"
    yield "[torch]\nbuilds = [\"newest\"]\n", "torch.builds[0]: 'newest' is not a version"
    yield "[torch]\nbuild = [\"2.5.1\"]\n", "torch.build: unknown key"
    yield "[gpu]\nmin = 1\n", "gpu: unknown section"
    yield "[driver]\nmin_version = 550\nseverity = \"fatal\"\n", "driver.severity: must be one of info, warning, error, not 'fatal'"
    yield "[driver]\nseverity = \"error\"\n", "driver: sets no rule"
    yield "[env]\nrequired = [\"MY_APP_TOKEN\"]\n", "env.required[0]: MY_APP_TOKEN is not among the variables envdoctor records"
    yield "[env]\nforbidden = [\"LD PRELOAD\"]\n", "env.forbidden[0]: 'LD PRELOAD' is not NAME or NAME=VALUE"
    yield "[env]\nforbidden = [\"LD_PRELOAD\"]\nremedy = 3\n", "env.remedy: must be a string, not 3"
    for value in ("0", "-8", "nan", "inf", "true", "\"8\""):
        yield f"[memory]\nmin_free_shm_gb = {value}\n", "memory.min_free_shm_gb: must be a positive number of GiB"
    for spec in (">=1.26,<<2", "~=1", "latest"):
        yield f"[packages.require]\nnumpy = \"{spec}\"\n", "packages.require.numpy: "
    yield "[packages.require]\n\"num\\u001b[2Jpy\" = \">=1\"\n", "packages.require.'num\\x1b[2Jpy': is not a package name"
    yield "[packages]\nnumpy = \">=1\"\n", "packages.numpy: unknown key"
    yield "[torch\nbuilds = 1\n", "not valid TOML: "
    yield "", "sets no rule"


@pytest.mark.parametrize("text,reason", list(bad_policies()))
def test_a_bad_policy_is_refused_in_one_line_naming_the_key_before_anything_runs(tmp_path, text, reason):
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    run = run_envdoctor("check", "--policy", str(path), cwd=tmp_path)
    assert run.returncode == 2, run
    assert run.stderr.startswith(f"envdoctor: error: {path}: {reason}")
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr and "\x1b" not in run.stderr
    assert run.stdout == "" and not (tmp_path / "reports").exists()


@pytest.mark.parametrize("content", [b"\xff\xfe[torch]", None])
def test_an_unreadable_policy_is_refused_in_one_line(tmp_path, content):
    path = tmp_path / "policy.toml"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    run = run_envdoctor("check", "--policy", str(path), cwd=tmp_path)
    assert run.returncode == 2 and run.stderr.startswith("envdoctor: error: ") and run.stderr.count("\n") == 1, run
    assert str(path) in run.stderr and not (tmp_path / "reports").exists()


def test_a_live_check_judges_this_machine_against_the_policy(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text("[env]\nrequired = [\"NCCL_SOCKET_IFNAME\"]\nforbidden = [\"WORLD_SIZE\"]\n", encoding="utf-8")
    run = run_envdoctor("check", "--no-probe", "--policy", str(path), "--only", "policy", "--json", "-", env={"WORLD_SIZE": "2"}, unset=["NCCL_SOCKET_IFNAME"], cwd=tmp_path)
    assert run.returncode == 1, run
    assert set(findings_by_id(run.json())) == {"policy.env-required", "policy.env-forbidden"}
    assert list(Path(tmp_path, "reports").glob("*.json"))


def test_the_diagnosis_sees_the_policys_findings(tmp_path, policy_file):
    """The policy's rules judge in the first pass with the checks, so the diagnosis ranks their breaches."""
    run = run_envdoctor("check", "--from", str(node(tmp_path, lambda f: f["memory"].update(ram_available_bytes=32 * GIB))), "--policy", str(policy_file), "--only", "policy,diagnosis", "--json", "-")
    assert run.returncode == 1, run
    assert [c["id"] for c in run.json()["diagnosis"]] == ["policy.ram"]
    assert "diagnosis.exception" in {c["id"] for c in run.json()["checks"]}


def test_checks_lists_the_rules_a_policy_adds(policy_file):
    run = run_envdoctor("checks", "--policy", str(policy_file))
    assert run.returncode == 0, run
    assert "policy.torch-build" in run.stdout and "Policy: NVIDIA driver 580.65.06 or newer" in run.stdout
    assert "policy." not in run_envdoctor("checks").stdout
