"""`envdoctor fleet --reports DIR`: the majority configuration, the outliers grouped by what differs,
each node's deviations, from files."""

from __future__ import annotations

import json
import os
import shutil
from functools import partial
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from envdoctor.fleet.aggregate import aggregate
from envdoctor.fleet.nodes import summarize
from envdoctor.fleet.sources import read_reports
from envdoctor.fleet.stream import PARALLEL_FROM, mapped
from conftest import TEST_DATA

DATA = TEST_DATA / "reports"
BASE = json.loads((DATA / "h100-cu130.json").read_text(encoding="utf-8"))
GENERATED_NODES = 200


def fleet_dir(tmp_path: Path, **nodes: str) -> Path:
    """A folder of reports as Slurm or Kubernetes jobs would leave it: node name -> crafted report."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    for node, report in nodes.items():
        shutil.copy(DATA / f"{report}.json", folder / f"{node}.json")
    return folder


def views(document: dict) -> dict:
    return {n["name"]: n for n in document["nodes"]}


def assert_refused_in_one_line(run, message: str) -> None:
    assert run.returncode == 2, run
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envdoctor: error:") and message in lines[0], run
    assert "Traceback" not in run.stderr and not run.stdout, run


def test_the_node_with_the_old_driver_and_mixed_wheels_stands_out(envdoctor, tmp_path):
    folder = fleet_dir(tmp_path, gpu01="h100-cu130", gpu02="h100-cu130", gpu03="v100-old-driver", gpu04="h100-cu130")
    run = envdoctor("fleet", "--reports", str(folder), "--json", "-", child=True)  # the command's wiring in a real `python -m envdoctor`
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
    assert document["counts"] == {"nodes": 4, "matching": 3, "deviating": 1, "without_report": 0, "breaking_policy": 0}


def test_verbose_lists_every_node_with_why(envdoctor, tmp_path):
    folder = fleet_dir(tmp_path, a="h100-cu130", b="v100-old-driver", c="h100-cu130")
    out = envdoctor("fleet", "--reports", str(folder), "-v").stdout
    assert "NVIDIA driver            580.65.06 (CUDA 13.0)  2/3" in out
    assert "[✗] b\n" in out and "[✓] a\n" in out and "[✓] c\n" in out
    assert "✗ NVIDIA driver  580.65.06 (CUDA 13.0) → 535.104.05 (CUDA 12.2)" in out
    assert "B's driver is too old for the CUDA 13.0 build of torch on B" in out
    assert out.rstrip().endswith("2 of 3 nodes match the majority, 1 deviates.")
    default = envdoctor("fleet", "--reports", str(folder)).stdout
    assert "Nodes:" not in default and "[✓] a\n" not in default
    assert "[✗] NVIDIA driver 535.104.05 (CUDA 12.2) on 1 node (majority: 580.65.06 (CUDA 13.0)): b\n" in default


def test_a_tie_is_split_not_guessed(envdoctor, tmp_path):
    folder = fleet_dir(tmp_path, a="h100-cu130", b="v100-old-driver")
    document = envdoctor("fleet", "--reports", str(folder), "--json", "-").json()
    split = {s["aspect"]: s["values"] for s in document["split"]}
    assert split["cuda.driver"] == {"580.65.06 (CUDA 13.0)": ["a"], "535.104.05 (CUDA 12.2)": ["b"]}
    assert all(not v["deviations"] for v in document["nodes"]) and not document["outliers"]


def test_report_files_are_nodes_too(envdoctor, tmp_path):
    """`--reports shared/*.json` and files from two folders: one node each, names kept apart."""
    first, second = fleet_dir(tmp_path, a="h100-cu130", b="h100-cu130"), tmp_path / "second"
    second.mkdir()
    shutil.copy(DATA / "v100-old-driver.json", second / "a.json")
    run = envdoctor("fleet", "--reports", str(first / "a.json"), str(first / "b.json"), str(second), "--json", "-")
    assert run.returncode == 1, run
    assert [n["name"] for n in run.json()["nodes"]] == [str(first / "a.json"), "b", str(second / "a.json")]
    assert [g["nodes"] for g in run.json()["outliers"]][0] == [str(second / "a.json")]


def test_a_uniform_fleet_exits_0(envdoctor, tmp_path):
    folder = fleet_dir(tmp_path, a="cpu-only", b="cpu-only")
    run = envdoctor("fleet", "--reports", str(folder))
    assert run.returncode == 0, run
    assert "2 of 2 nodes match the majority." in run.stdout and "Outliers" not in run.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give exactly one of --address"),
        (("--reports", "{tmp}/missing"), "no such file or folder"),
        (("{tmp}/a.json",), "report files are read with --reports"),
        (("--reports", "{tmp}"), "no *.json reports in it"),
        (("--reports", "{tmp}", "--python", "/usr/bin/python3"), "apply to --address only"),
        (("--address", "127.0.0.1:1"), "no Ray cluster answers at 127.0.0.1:1"),
        (("--reports", "{tmp}", "--json", "-", "--markdown", "-"), "cannot both write to stdout"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(envdoctor, tmp_path, args, message):
    assert_refused_in_one_line(envdoctor("fleet", *(a.format(tmp=tmp_path) for a in args)), message)
    assert not (tmp_path / "reports").exists()  # nothing was saved


# A generated fleet: the crafted H100 report on every node, a few aspects varied on a few nodes.


def set_variable(name: str, value: str) -> Callable[[dict], None]:
    return lambda report: report["facts"]["environ"]["variables"].__setitem__(name, value)


def set_numpy(version: str) -> Callable[[dict], None]:
    def change(report: dict) -> None:
        next(d for d in report["facts"]["target"]["distributions"] if d["name"] == "numpy")["version"] = version

    return change


def set_driver(version: str, cuda: str) -> Callable[[dict], None]:
    return lambda report: report["facts"]["gpu"].__setitem__("driver", {"version": version, "cuda": cuda})


def cpu_torch(report: dict) -> None:
    report["facts"]["target"]["torch_build"] = {"version": "2.13.0+cpu", "cuda": None, "hip": None}


def finding(finding_id: str, title: str) -> dict:
    return {"id": finding_id, "severity": "warning", "title": title, "explanation": "", "evidence": {}, "remedies": [], "references": []}


def add_finding(report: dict) -> None:
    report["findings"].append(finding("memory.shm-small", "/dev/shm is 64 MB"))


OMP_NODES = [7, 23, 39, 55, 71, 87, 103, 119, 135, 151, 167, 183]  # more than a group's names shown
VARIED: Dict[int, List[Callable[[dict], None]]] = {
    **{i: [set_variable("OMP_NUM_THREADS", "64")] for i in OMP_NODES},
    **{i: [set_numpy("1.26.4")] for i in (11, 99, 150)},
    # the same old driver under torch cu130 (fails to initialise) and under a CPU torch (merely older)
    **{i: [set_driver("535.104.05", "12.2")] for i in (40, 140)},
    41: [set_driver("535.104.05", "12.2"), cpu_torch],
    **{i: [add_finding] for i in (5, 6)},
}
VARIED[7] = [*VARIED[7], set_numpy("1.26.4")]  # one node in two groups
BROKEN = {
    "node00198": "srun: error: node198: task 0: Killed\n",
    "node00199": json.dumps(BASE)[:1000],
}


def node(i: int) -> str:
    return f"node{i:05d}"


@pytest.fixture(scope="session")
def generated_fleet(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("generated") / "fleet"
    folder.mkdir()
    for i in range(GENERATED_NODES):
        report = json.loads(json.dumps(BASE))
        for change in VARIED.get(i, ()):
            change(report)
        text = BROKEN.get(node(i)) or json.dumps(report, indent=2)
        (folder / f"{node(i)}.json").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def generated_json(generated_fleet) -> dict:
    from conftest import run_envdoctor

    run = run_envdoctor("fleet", "--reports", str(generated_fleet), "--json", "-", cwd=generated_fleet.parent)
    assert run.returncode == 1, run
    return run.json()


def expected_nodes(change) -> List[str]:
    return [node(i) for i, changes in sorted(VARIED.items()) if change in changes]


def test_outliers_are_grouped_by_what_differs(generated_json):
    groups = {(g["aspect"], g["value"]): g for g in generated_json["outliers"]}
    omp = groups[("threads.OMP_NUM_THREADS", "64")]
    assert omp["nodes"] == [node(i) for i in OMP_NODES] and omp["count"] == 12 and omp["majority"] == "unset"
    numpy = groups[("numpy.major", "1")]
    assert numpy["nodes"] == [node(i) for i in (7, 11, 99, 150)] and numpy["impact"] == "likely to break"
    driver = groups[("cuda.driver", "535.104.05 (CUDA 12.2)")]
    assert driver["nodes"] == [node(i) for i in (40, 41, 140)]
    assert driver["impact"] == "likely to break" and "too old for the CUDA 13.0 build" in driver["why"]
    assert groups[("torch", "2.13.0 (cpu)")]["nodes"] == [node(41)]
    # likely to break first, in aspect order, then may break
    assert [g["aspect"] for g in generated_json["outliers"]] == ["torch", "cuda.driver", "numpy.major", "threads.OMP_NUM_THREADS"]


def test_each_node_keeps_its_own_judgement(generated_json):
    nodes = views(generated_json)
    driver = lambda name: next(d for d in nodes[name]["deviations"] if d["aspect"] == "cuda.driver")  # noqa: E731
    assert driver(node(40))["impact"] == "likely to break"
    assert driver(node(41))["impact"] == "may break" and "older than A's" in driver(node(41))["why"]
    assert [d["aspect"] for d in nodes[node(7)]["deviations"]] == ["numpy.major", "threads.OMP_NUM_THREADS"]
    assert len(nodes) == GENERATED_NODES and all(not n["deviations"] for name, n in nodes.items() if int(name[4:]) not in VARIED)


def test_counts_rare_findings_and_nodes_without_a_report(generated_json):
    assert generated_json["counts"] == {"nodes": 200, "matching": 200 - len(VARIED) - 2, "deviating": len(VARIED), "without_report": 2, "breaking_policy": 0}
    assert [(g["id"], g["nodes"]) for g in generated_json["rare_findings"]] == [("memory.shm-small", [node(5), node(6)])]
    missing = {n for g in generated_json["without_report"] for n in g["nodes"]}
    assert missing == set(BROKEN)
    assert all(g["reason"].startswith("the report is not JSON") for g in generated_json["without_report"])


def test_default_view_names_groups_and_bounds_the_names(envdoctor, generated_fleet):
    run = envdoctor("fleet", "--reports", str(generated_fleet))
    assert run.returncode == 1, run
    out = run.stdout
    shown = ", ".join(node(i) for i in OMP_NODES[:8])
    assert f"[!] OMP_NUM_THREADS=64 on 12 nodes (majority: unset): {shown}, … (4 more)" in " ".join(out.split())
    assert "[✗] NumPy major 1 on 4 nodes (majority: 2)" in out
    assert "[!] memory.shm-small on 2 nodes: node00005, node00006" in out
    assert "Without a report:" in out and "node00198" in out
    assert "node00100" not in out  # matching nodes are counted, not listed
    assert out.rstrip().endswith(f"{200 - len(VARIED) - 2} of 200 nodes match the majority, {len(VARIED)} deviate, 2 without a report.")
    assert len(out.splitlines()) < 60
    verbose = envdoctor("fleet", "--reports", str(generated_fleet), "-v").stdout
    assert "[✓] node00100\n" in verbose and len(verbose.splitlines()) > GENERATED_NODES


def test_markdown_groups_outliers(envdoctor, generated_fleet):
    md = envdoctor("fleet", "--reports", str(generated_fleet), "--markdown", "-").stdout
    assert md.startswith("## envdoctor fleet")
    assert "- ⚠️ **OMP_NUM_THREADS=64** on 12 nodes (majority: unset): node00007," in md
    assert "### Without a report" in md and "node00100" not in md


def test_a_fleet_of_singular_nodes_is_still_read_in_a_few_lines(envdoctor, tmp_path):
    """Every odd node with its own kernel or its own broken file: the view stays bounded, JSON keeps all."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    for i in range(40):
        report = json.loads(json.dumps(BASE))
        if i >= 28:
            report["facts"]["system"]["kernel_release"] = f"6.8.0-{i}-generic"
        text = " " * i + "}" if i < 12 else json.dumps(report)  # each broken at another column
        (folder / f"{node(i)}.json").write_text(text)
    run = envdoctor("fleet", "--reports", str(folder))
    assert run.returncode == 1, run
    assert run.stdout.count("[!] Kernel 6.8.0-") == 5 and "… 7 more groups on 7 nodes (-v and --json list them)" in run.stdout
    assert "… 2 more groups on 2 nodes (-v and --json list them)" in run.stdout
    document = envdoctor("fleet", "--reports", str(folder), "--json", "-").json()
    assert len(document["outliers"]) == 12 and sum(g["count"] for g in document["without_report"]) == 12


POLICY = """
[env]
forbidden = ["OMP_NUM_THREADS=64"]

[packages.require]
numpy = ">=2"
"""


def test_policy_lists_the_nodes_that_break_it_by_finding_id(envdoctor, generated_fleet, tmp_path):
    (tmp_path / "cluster.toml").write_text(POLICY)
    run = envdoctor("fleet", "--reports", str(generated_fleet), "--policy", "cluster.toml", "--json", "-")
    assert run.returncode == 1, run
    document = run.json()
    broken = {g["id"]: g["nodes"] for g in document["policy_findings"]}
    assert broken == {"policy.env-forbidden": [node(i) for i in OMP_NODES], "policy.package": [node(i) for i in (7, 11, 99, 150)]}
    assert document["counts"]["breaking_policy"] == 15
    assert [f["id"] for f in views(document)[node(7)]["policy_findings"]] == ["policy.env-forbidden", "policy.package"]
    text = envdoctor("fleet", "--reports", str(generated_fleet), "--policy", "cluster.toml").stdout
    assert "Policy broken:" in text and "[✗] policy.env-forbidden on 12 nodes: node00007," in text and "15 break the policy" in text


def test_a_bad_policy_is_refused_before_any_report_is_read(envdoctor, generated_fleet, tmp_path):
    (tmp_path / "cluster.toml").write_text('[packages.require]\nnumpy = ">=1.26,<<2"\n')
    assert_refused_in_one_line(envdoctor("fleet", "--reports", str(generated_fleet), "--policy", "cluster.toml"), "packages.require.numpy")


def test_reading_in_workers_gives_what_reading_here_gives(generated_fleet):
    sources = read_reports([generated_fleet])
    assert len(sources) >= PARALLEL_FROM  # so two workers make a real pool
    here = list(mapped(partial(summarize, judge=None), sources, workers=1))
    assert list(mapped(partial(summarize, judge=None), sources, workers=2)) == here
    assert [s.name for s in here] == [s.name for s in sources] and sum(1 for s in here if s.error) == len(BROKEN)


def test_a_report_changed_between_the_passes_is_said_so(tmp_path):
    folder = fleet_dir(tmp_path, a="h100-cu130", b="h100-cu130", c="v100-old-driver")
    summaries = [summarize(s) for s in read_reports([folder])]
    shutil.copy(DATA / "h100-cu130.json", folder / "c.json")  # c finished writing another report meanwhile
    view = aggregate(summaries)
    c = next(n for n in view.nodes if n.name == "c")
    assert "changed while the fleet was read" in c.error and not c.deviations


# Hostile folders: every odd file is a node without a report, with its reason; nothing hangs or is lost.


def deep(path: Path) -> None:
    path.write_text('{"schema_version": "1.0", "facts": {"cpu": ' + "[" * 5000 + "]" * 5000 + "}}")


def sparse(path: Path) -> None:
    """A file past the report size limit that costs no disk."""
    with path.open("wb") as stream:
        stream.truncate(65 * 2**20)


HOSTILE: Dict[str, Callable[[Path], None]] = {
    "a FIFO is not waited on": os.mkfifo,
    "a device is not read": lambda path: path.symlink_to("/dev/zero"),
    "a folder is refused": lambda path: path.mkdir(),
    "larger than": sparse,
    "nested deeper": deep,
    "another schema major": lambda path: path.write_text(json.dumps({**BASE, "schema_version": "2.0"})),
    "findings of the wrong shape": lambda path: path.write_text(json.dumps({**BASE, "findings": [{"id": 1}]})),
    "facts not an object": lambda path: path.write_text(json.dumps({**BASE, "facts": []})),
    "control characters": lambda path: path.write_text(json.dumps({**BASE, "findings": [finding("odd.title", "\x1b]52;c;aGk=\x07\x1b[2J\u202etitle")]})),
}
REASONS = {
    "a FIFO is not waited on": "is not a regular file",
    "a device is not read": "is not a regular file",
    "a folder is refused": "is not a regular file",
    "larger than": "larger than 64 MiB",
    "nested deeper": "nested deeper",
    "another schema major": "uses report schema 2.0",
    "findings of the wrong shape": "is not a valid envdoctor report at findings/0",
    "facts not an object": "is not a valid envdoctor report at facts",
}


@pytest.fixture(scope="session")
def hostile_run(tmp_path_factory):
    from conftest import run_envdoctor

    folder = tmp_path_factory.mktemp("hostile") / "fleet"
    folder.mkdir()
    for i in range(3):
        shutil.copy(DATA / "h100-cu130.json", folder / f"good{i}.json")
    for number, make in enumerate(HOSTILE.values()):
        make(folder / f"odd{number}.json")
    before = sorted((p.name, p.lstat().st_mtime_ns) for p in folder.iterdir())
    run = run_envdoctor("fleet", "--reports", str(folder), "--json", "-", cwd=folder.parent, timeout=60)
    after = sorted((p.name, p.lstat().st_mtime_ns) for p in folder.iterdir())
    assert before == after  # read only
    text = run_envdoctor("fleet", "--reports", str(folder), cwd=folder.parent, timeout=60)
    return run, text


@pytest.mark.parametrize("case", list(REASONS))
def test_hostile_files_are_nodes_without_a_report(hostile_run, case):
    run, _ = hostile_run
    assert run.returncode == 1, run
    node_view = views(run.json())[f"odd{list(HOSTILE).index(case)}"]
    assert REASONS[case] in node_view["error"] and not node_view["deviations"]
    assert all(not v["error"] for name, v in views(run.json()).items() if name.startswith("good"))


def test_hostile_strings_are_escaped_on_the_terminal(hostile_run):
    run, text = hostile_run
    assert text.returncode == 1, text
    assert "\x1b" not in text.stdout and "\u202e" not in text.stdout
    assert "odd.title on 1 node" in text.stdout and "\\x1b]52;c;aGk=\\x07\\x1b[2J\\u202etitle" in text.stdout
