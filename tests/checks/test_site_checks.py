"""The checks/ distribution (envdoctor-site-checks) really installed beside envdoctor: its checks run,
skip and fail through the CLI, from the site's settings in variables or a TOML file."""

import json
import shutil
import site
import subprocess
import sys

import pytest

from conftest import REPO, changed_report, findings_by_id

sys.path.insert(0, str(REPO / "checks"))
from envdoctor_site_checks import rules  # noqa: E402  (the pure rules, without registering them)

REPORTS = REPO / "tests" / "data" / "reports"
SITE = {
    "ENVDOCTOR_SITE_MIN_DRIVER_BRANCH": "580",
    "ENVDOCTOR_SITE_TORCH_BUILD": "2.13.0+cu130",
    "ENVDOCTOR_SITE_CHECKPOINT_DIR": "/scratch/ckpt",
    "ENVDOCTOR_SITE_CHECKPOINT_FREE_GB": "100",
}
GIB = 2**30


@pytest.fixture(scope="session")
def site_python(venvs, tmp_path_factory):
    """A throwaway venv that sees envdoctor from the repository and has checks/ really installed (built here,
    with this environment's setuptools, which the venv sees too)."""
    python = venvs.get("site-checks")
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True).stdout.strip()
    with open(f"{purelib}/envdoctor-dev.pth", "w") as stream:
        stream.write("\n".join([str(REPO), *site.getsitepackages()]) + "\n")
    source = shutil.copytree(REPO / "checks", tmp_path_factory.mktemp("site") / "checks-source", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    venvs.install("site-checks", "--no-deps", "--no-build-isolation", "--no-cache", str(source))  # a build of this tree, never a cached one
    return python


def run_in(python, *args, env=None, cwd=None):
    environ = {"NO_COLOR": "1", "PATH": "/usr/bin:/bin", **(env or {})}
    return subprocess.run([str(python), "-m", "envdoctor", *args], capture_output=True, text=True, env=environ, cwd=cwd)


def node_report(tmp_path, **changes):
    """The H100 report as a node of the site would record it: the team's torch, driver 580, 500 GiB
    free in the checkpoint folder; `changes` replace fact sections."""

    def change(facts):
        facts["disk"] = {"folders": [{"path": "/scratch/ckpt", "free_bytes": 500 * GIB, "total_bytes": 1000 * GIB}]}
        facts.update(changes)

    return changed_report(REPORTS / "h100-cu130.json", tmp_path / "node.json", change)


def statuses(report):
    return {c["id"]: c["status"] for c in report["checks"] if c["id"].startswith("site.")}


@pytest.mark.slow
def test_a_node_that_meets_the_site_standard_passes_every_site_check(site_python, tmp_path):
    run = run_in(site_python, "check", "--from", str(node_report(tmp_path)), "--only", "site", "--json", "-", env=SITE)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert statuses(report) == dict.fromkeys(["site.distributed-env", "site.forbidden-env", "site.driver-branch", "site.torch-build", "site.checkpoint-disk"], "passed")


@pytest.mark.slow
def test_a_node_that_breaks_it_fails_with_each_rule_named(site_python, tmp_path):
    facts = {
        "gpu": {"source": "nvml", "driver": {"version": "570.86.10", "cuda": "12.8"}, "gpus": []},
        "environ": {"variables": {"WORLD_SIZE": "16", "MASTER_ADDR": "node1", "CUDA_LAUNCH_BLOCKING": "1"}},
        "disk": {"folders": [{"path": "/scratch/ckpt", "free_bytes": 3 * GIB, "total_bytes": 1000 * GIB}]},
    }
    run = run_in(site_python, "check", "--from", str(node_report(tmp_path, **facts)), "--only", "site", "--json", "-", env={**SITE, "ENVDOCTOR_SITE_TORCH_BUILD": "2.5.1+cu124"})
    assert run.returncode == 1, run.stderr
    found = {id: [f["title"] for f in group] for id, group in findings_by_id(json.loads(run.stdout)).items()}
    assert found == {
        "site.driver-branch": ["NVIDIA driver 570.86.10 is installed; this cluster requires driver branch 580 or newer"],
        "site.torch-build": ["torch 2.13.0+cu130 is installed; the team's build is 2.5.1+cu124"],
        "site.distributed-env": ["A job of 16 processes without MASTER_PORT, NCCL_SOCKET_IFNAME"],
        "site.checkpoint-disk": ["3.0 GiB free in the checkpoint folder /scratch/ckpt; the site requires 100 GiB"],
        "site.forbidden-env": ["CUDA_LAUNCH_BLOCKING=1 is set; production jobs here must not set CUDA_LAUNCH_BLOCKING=1"],
    }


@pytest.mark.slow
def test_checks_whose_facts_were_not_recorded_are_skipped_not_passed(site_python):
    run = run_in(site_python, "check", "--from", str(REPORTS / "gpu-collector-failed.json"), "--only", "site", "--json", "-", env=SITE)
    checks = statuses(json.loads(run.stdout))
    assert checks["site.driver-branch"] == "skipped"
    assert checks["site.checkpoint-disk"] == "skipped"  # a report from before the disk facts


@pytest.mark.slow
def test_only_the_rules_the_site_sets_are_registered(site_python):
    run = run_in(site_python, "checks", env={"ENVDOCTOR_SITE_FORBIDDEN_ENV": ""})
    assert [line.split()[0] for line in run.stdout.splitlines() if line.startswith("site.")] == ["site.distributed-env"]


@pytest.mark.slow
def test_settings_come_from_the_config_file_and_variables_win(site_python, tmp_path):
    config = tmp_path / "site.toml"
    config.write_text('[site]\nmin_driver_branch = 590\ntorch_build = "2.5.1+cu124"\n', encoding="utf-8")
    env = {"ENVDOCTOR_SITE_CONFIG": str(config), "ENVDOCTOR_SITE_TORCH_BUILD": "2.13.0+cu130"}
    run = run_in(site_python, "check", "--from", str(node_report(tmp_path)), "--only", "site", "--json", "-", env=env)
    assert set(findings_by_id(json.loads(run.stdout))) == {"site.driver-branch"}


def bad_settings():
    yield {"ENVDOCTOR_SITE_MIN_DRIVER_BRANCH": "550.54"}, "ENVDOCTOR_SITE_MIN_DRIVER_BRANCH: must be a driver branch"
    yield {"ENVDOCTOR_SITE_CHECKPOINT_DIR": "ckpt"}, "ENVDOCTOR_SITE_CHECKPOINT_DIR: must be an absolute path"
    yield {"ENVDOCTOR_SITE_CHECKPOINT_FREE_GB": "nan"}, "ENVDOCTOR_SITE_CHECKPOINT_FREE_GB: must be a positive number"
    yield {"ENVDOCTOR_SITE_FORBIDDEN_ENV": "LD_PRELOAD,SECRET_SAUCE"}, "'SECRET_SAUCE' is not a variable envdoctor records"
    yield {"ENVDOCTOR_SITE_TORCH_BUILD": "latest"}, "ENVDOCTOR_SITE_TORCH_BUILD: must be a torch version"


@pytest.mark.slow
@pytest.mark.parametrize("env,reason", list(bad_settings()))
def test_a_bad_setting_fails_the_plugin_visibly_and_runs_none_of_its_checks(site_python, tmp_path, env, reason):
    run = run_in(site_python, "check", "--from", str(node_report(tmp_path)), "--json", "-", env=env)
    report = json.loads(run.stdout)
    (failure,) = findings_by_id(report)["doctor.plugin-failed"]
    assert "'site'" in failure["title"] and reason in failure["explanation"]
    assert statuses(report) == {}


@pytest.mark.slow
def test_the_checkpoint_folder_is_measured_on_the_live_machine(site_python, tmp_path):
    missing = tmp_path / "not-mounted"
    env = {"ENVDOCTOR_SITE_CHECKPOINT_DIR": str(missing), "ENVDOCTOR_DISK_PATHS": str(missing)}
    run = run_in(site_python, "check", "--no-save", "--no-probe", "--only", "site.checkpoint-disk", "--json", "-", env=env, cwd=tmp_path)
    (finding,) = findings_by_id(json.loads(run.stdout))["site.checkpoint-disk"]
    assert finding["title"] == f"The checkpoint folder {missing} cannot be used: No such file or directory"
    assert finding["remedies"][0]["command"] == f"mkdir -p {missing}"
    assert run.returncode == 1


def world_sizes():
    full = {"MASTER_ADDR": "node1", "MASTER_PORT": "29500", "NCCL_SOCKET_IFNAME": "ib0"}
    yield {}, []
    yield {"WORLD_SIZE": "1"}, []
    yield {"WORLD_SIZE": "8", **full}, []
    for name in full:
        yield {"WORLD_SIZE": "8", **{k: v for k, v in full.items() if k != name}}, [f"A job of 8 processes without {name}"]
    yield {"WORLD_SIZE": "eight"}, ["WORLD_SIZE is 'eight', not a number of processes"]


@pytest.mark.parametrize("variables,titles", list(world_sizes()))
def test_distributed_env_needs_the_rendezvous_only_for_more_than_one_process(variables, titles):
    assert [f.title for f in rules.distributed_env({"environ": {"variables": variables}})] == titles
