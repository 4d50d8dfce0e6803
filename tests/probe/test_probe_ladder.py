"""The real ladder against real environments: the dev venv (torch CPU, SB3, sb3-contrib, gymnasium)
passes every stage up to the save/load round trip; a venv without them shows those stages skipped
with the command that installs them. The full ladder runs once per session and is shared."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import Run, built_once, findings_by_id, run_envdoctor
from envdoctor.probe import ladder
from helpers.pythons import needed_python

pytestmark = pytest.mark.slow
REQUIRED_PASS = ("interpreter", "import_numpy", "import_torch", "cpu_ops", "thread_pools", "import_gymnasium", "import_sb3", "import_sb3_contrib", "maskable_ppo", "learn", "save_load")


def probed(folder: Path) -> None:
    """A real `envdoctor check` of the dev venv in `folder`, every output format written, its exit status
    and streams kept beside them."""
    run = run_envdoctor("check", "--json", str(folder / "report.json"), "--markdown", str(folder / "report.md"), "--report-dir", str(folder / "saved"), cwd=folder)
    (folder / "returncode").write_text(str(run.returncode))
    (folder / "stdout").write_text(run.stdout)
    (folder / "stderr").write_text(run.stderr)


@pytest.fixture(scope="session")
def checked(tmp_path_factory):
    """The one probing check of the test run (pytest-xdist's workers share it): its run, report, Markdown and folder."""
    folder = built_once(tmp_path_factory, "probe-check", probed)
    run = Run(subprocess.CompletedProcess([], int((folder / "returncode").read_text()), (folder / "stdout").read_text(), (folder / "stderr").read_text()))
    return run, json.loads((folder / "report.json").read_text()), (folder / "report.md").read_text(), folder


def stages(report) -> dict:
    return {s["id"]: s for s in report["probe"]["stages"]}


def test_every_stage_up_to_save_load_passes(checked):
    run, report, _, _ = checked
    by_id = stages(report)
    assert list(by_id) == list(ladder.IDS)
    assert {i: by_id[i]["status"] for i in REQUIRED_PASS} == {i: "passed" for i in REQUIRED_PASS}, run
    assert report["probe"]["ending"] == "completed"
    assert by_id["import_torch"]["details"]["version"].startswith("2.13.0")
    assert by_id["maskable_ppo"]["details"]["device"] == "cpu"
    assert by_id["learn"]["details"]["timesteps"] == 64
    assert by_id["save_load"]["details"]["zip_bytes"] > 10_000
    assert all(by_id[i]["duration_s"] > 0 for i in REQUIRED_PASS)


def test_cuda_stages_are_skipped_on_a_cpu_build(checked):
    by_id = stages(checked[1])
    assert by_id["cuda_init"]["status"] == by_id["cuda_matmul"]["status"] == "skipped"
    assert "CPU-only build" in by_id["cuda_init"]["reason"]


def test_thread_pools_show_the_loaded_openmp_runtime(checked):
    details = stages(checked[1])["thread_pools"]["details"]
    assert details["torch_num_threads"] >= 1
    assert "ATen parallel backend" in details["parallel_info"]
    assert [Path(r["filepath"]).name for r in details["openmp_runtimes"]] == ["libgomp.so.1"]


def test_a_passing_probe_gives_no_probe_finding(checked):
    run, report, _, _ = checked
    assert not [f for f in report["findings"] if f["id"].startswith("probe.")]
    assert {c["id"]: c["status"] for c in report["checks"]}["probe.crash"] == "passed"


def test_progress_is_shown_on_stderr_while_it_runs(checked):
    run = checked[0]
    for title in ("import torch", "MaskablePPO construct", "save/load round trip"):
        assert re.search(rf"^probe: {re.escape(title)} … passed \d+\.\d\d s$", run.stderr, re.M), run.stderr
    assert "probe: CUDA matmul … skipped" in run.stderr


def test_probe_section_in_terminal_markdown_and_saved_json(checked):
    run, report, markdown, folder = checked
    assert re.search(r"Probe ladder  completed in \d+\.\d s", run.stdout)
    assert re.search(r"✓ save/load round trip +\d+\.\d\d s  passed", run.stdout)
    assert "### Probe ladder: completed" in markdown
    assert re.search(r"\| MaskablePPO construct \| passed \| \d+\.\d\d s \|", markdown)
    saved = json.loads(next((folder / "saved").glob("*.json")).read_text())
    assert saved["probe"]["stages"] == report["probe"]["stages"]


def test_rejudging_keeps_the_recorded_probe(checked):
    folder = checked[3]
    again = run_envdoctor("check", "--from", str(folder / "report.json"), "--json", "-", "--no-save", cwd=folder)
    assert again.returncode == 0, again
    assert again.json()["probe"] == checked[1]["probe"]


def test_no_probe_leaves_the_ladder_out(envdoctor):
    run = envdoctor("check", "--no-probe", "--json", "-", "--no-save")
    report = run.json()
    assert report["probe"] is None
    assert {c["id"]: c["status"] for c in report["checks"]}["probe.crash"] == "skipped"
    assert "probe:" not in run.stderr


def test_a_bad_probe_timeout_is_a_usage_error(envdoctor):
    run = envdoctor("check", "--probe-timeout", "0")
    assert run.returncode == 2
    assert "--probe-timeout" in run.stderr


def test_venv_without_torch_and_sb3_shows_skipped_stages_with_install_hints(envdoctor, venvs):
    python = venvs.get("probe-numpy-only", ["numpy"])
    run = envdoctor("check", "--python", str(python), "--only", "probe", "--json", "-", "--no-save")
    assert run.returncode == 0, run
    by_id = stages(run.json())
    assert by_id["import_numpy"]["status"] == "passed"
    for stage, distribution in (("import_sb3", "stable-baselines3"), ("import_sb3_contrib", "sb3-contrib"), ("maskable_ppo", "sb3-contrib"), ("import_gymnasium", "gymnasium")):
        assert by_id[stage]["status"] == "skipped"
        assert by_id[stage]["reason"].endswith(f"{python} -m pip install {distribution}")
    assert by_id["import_torch"]["status"] == "skipped" and "pip install torch" in by_id["import_torch"]["reason"]


@pytest.mark.parametrize("minor", ["3.8", "3.13"])
def test_ladder_runs_under_a_bare_python(minor):
    from envdoctor.probe.probing import run_probe
    from envdoctor.probe.runner import ProbeOptions

    probe = run_probe(needed_python(minor), {"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"}, ProbeOptions(timeout_s=60))
    assert probe["ending"] == "completed"
    assert probe["stages"][0]["status"] == "passed" and probe["stages"][0]["details"]["version"].startswith(minor + ".")
    assert {s["status"] for s in probe["stages"][1:]} == {"skipped"}
    assert [s["id"] for s in probe["stages"]] == list(ladder.IDS)


@pytest.mark.slow
def test_a_local_folder_that_shadows_an_installed_package_is_named_by_the_default_check(envdoctor, venvs, tmp_path):
    python = venvs.get("probe-numpy-only", ["numpy"])
    (tmp_path / "numpy").mkdir()  # a package of the project that happens to be called numpy
    (tmp_path / "numpy" / "__init__.py").write_text("")
    run = envdoctor("check", "--python", str(python), "--only", "probe", "--json", "-", "--no-save")
    assert run.returncode == 1, run
    [finding] = findings_by_id(run.json())["probe.import-error"]
    assert finding["evidence"]["shadowed_by"] == str(tmp_path / "numpy")
    assert "shadowed by" in finding["title"] and "Reinstalling does not help" in finding["explanation"]
    assert finding["remedies"][0]["command"].startswith(f"mv {tmp_path / 'numpy'} ")
