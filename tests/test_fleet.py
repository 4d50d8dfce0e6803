"""`envdoctor fleet --reports DIR`: the majority configuration and each node's deviations, from files."""

from __future__ import annotations

import shutil
from pathlib import Path

DATA = Path(__file__).parent / "data" / "reports"


def fleet_dir(tmp_path: Path, **nodes: str) -> Path:
    """A folder of reports as Slurm or Kubernetes jobs would leave it: node name -> crafted report."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    for node, report in nodes.items():
        shutil.copy(DATA / f"{report}.json", folder / f"{node}.json")
    return folder


def views(document: dict) -> dict:
    return {n["name"]: n for n in document["nodes"]}


def test_the_node_with_the_old_driver_and_mixed_wheels_stands_out(envdoctor, tmp_path):
    folder = fleet_dir(tmp_path, gpu01="h100-cu130", gpu02="h100-cu130", gpu03="v100-old-driver", gpu04="h100-cu130")
    run = envdoctor("fleet", "--reports", str(folder), "--json", "-")
    assert run.returncode == 1, run
    document = run.json()
    nodes = views(document)
    assert [n for n, v in nodes.items() if v["deviations"] or v["rare_findings"]] == ["gpu03"]
    odd = nodes["gpu03"]
    assert [d["aspect"] for d in odd["deviations"]][:4] == ["cuda.driver", "gpu.architecture", "wheels.families", "cpu.instruction-sets"]
    assert odd["deviations"][0]["a"] == "580.65.06 (CUDA 13.0)" and odd["deviations"][0]["b"] == "535.104.05 (CUDA 12.2)"
    assert [f["id"] for f in odd["rare_findings"]] == ["cuda.driver-too-old", "wheels.mixed-cuda-families"]
    majority = {m["aspect"]: (m["value"], m["nodes"], m["of"]) for m in document["majority"]}
    assert majority["cuda.driver"] == ("580.65.06 (CUDA 13.0)", 3, 4)
    assert majority["torch"] == ("2.13.0 (cu130)", 4, 4)


def test_terminal_view_names_the_odd_node_and_why(envdoctor, tmp_path):
    folder = fleet_dir(tmp_path, a="h100-cu130", b="v100-old-driver", c="h100-cu130")
    out = envdoctor("fleet", "--reports", str(folder), "-v").stdout
    assert "NVIDIA driver            580.65.06 (CUDA 13.0)  2/3" in out
    assert "[✗] b\n" in out and "[✓] a\n" in out and "[✓] c\n" in out
    assert "✗ NVIDIA driver  580.65.06 (CUDA 13.0) → 535.104.05 (CUDA 12.2)" in out
    assert "B's driver is too old for the CUDA 13.0 build of torch on B" in out
    assert out.rstrip().endswith("2 of 3 nodes match the majority, 1 deviates.")


def test_a_tie_is_split_not_guessed(envdoctor, tmp_path):
    folder = fleet_dir(tmp_path, a="h100-cu130", b="v100-old-driver")
    document = envdoctor("fleet", "--reports", str(folder), "--json", "-").json()
    split = {s["aspect"]: s["values"] for s in document["split"]}
    assert split["cuda.driver"] == {"580.65.06 (CUDA 13.0)": ["a"], "535.104.05 (CUDA 12.2)": ["b"]}
    assert all(not v["deviations"] for v in document["nodes"])


def test_unreadable_files_are_nodes_without_a_report(envdoctor, tmp_path):
    folder = fleet_dir(tmp_path, a="h100-cu130", b="h100-cu130")
    (folder / "c.json").write_text("srun: error: node c: task 0: Killed\n")
    run = envdoctor("fleet", "--reports", str(folder), "--json", "-")
    assert run.returncode == 1, run
    c = views(run.json())["c"]
    assert "is not JSON" in c["error"]
    terminal = envdoctor("fleet", "--reports", str(folder)).stdout
    assert "2 of 3 nodes match the majority, 1 without a report." in terminal


def test_a_uniform_fleet_exits_0(envdoctor, tmp_path):
    folder = fleet_dir(tmp_path, a="cpu-only", b="cpu-only")
    run = envdoctor("fleet", "--reports", str(folder))
    assert run.returncode == 0, run
    assert "2 of 2 nodes match the majority." in run.stdout


def test_bad_usage_is_one_line_and_exit_2(envdoctor, tmp_path):
    for args, message in (
        ((), "give exactly one of --address"),
        (("--reports", str(tmp_path / "missing")), "no such folder"),
        (("--reports", str(tmp_path)), "no *.json reports in it"),
        (("--reports", str(tmp_path), "--python", "/usr/bin/python3"), "apply to --address only"),
        (("--address", "127.0.0.1:1"), "no Ray cluster answers at 127.0.0.1:1"),
    ):
        run = envdoctor("fleet", *args)
        assert run.returncode == 2, run
        assert len(run.stderr.strip().splitlines()) == 1 and message in run.stderr, run
