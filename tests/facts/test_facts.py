"""The typed fact views: built from every recorded report, from failed collectors and from sections of
every wrong shape, they answer a view or Unrecorded with a reason, never an exception; and the
packages that read facts (fix, compare, fleet) read them through the views, not through checks/."""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

import pytest

from conftest import REPO
from envdoctor.checks.registry import load_checks
from envdoctor.checks.runner import run_checks, run_one
from envdoctor.compare import readers
from envdoctor.facts import CachedFacts, Unrecorded, UnusableFacts, read
from envdoctor.facts.conda import CondaView
from envdoctor.facts.cpu import CpuView
from envdoctor.facts.environ import EnvironView
from envdoctor.facts.gpu import GpuView
from envdoctor.facts.libraries import LibrariesView
from envdoctor.facts.memory import MemoryView
from envdoctor.facts.probe import Probe
from envdoctor.facts.run import RunView
from envdoctor.facts.system import SystemView
from envdoctor.facts.target import TargetView
from envdoctor.model import CheckStatus

VIEWS = (TargetView, SystemView, CpuView, MemoryView, GpuView, LibrariesView, EnvironView, RunView, Probe, CondaView)
RECORDED = sorted(p for p in (REPO / "tests" / "data").rglob("*.json") if "facts" in json.loads(p.read_text(encoding="utf-8")))
WRONG = {"number": 7, "list": ["x"], "none": None}


def facts_of(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))["facts"]


def wrong_shapes():
    """Each field of each section of each recorded report (and each field of the target's python)
    replaced by a number, a list and None."""
    for path in RECORDED:
        facts = facts_of(path)
        for name, found in facts.items():
            if not isinstance(found, dict):
                continue
            fields = [(name, key) for key in found] + [(name, "python", key) for key in found.get("python", {}) if name == "target"]
            for where in fields:
                for label, value in WRONG.items():
                    changed = copy.deepcopy(facts)
                    holder = changed
                    for key in where[:-1]:
                        holder = holder[key]
                    holder[where[-1]] = value
                    yield f"{path.name}:{'.'.join(where)}={label}", changed


def test_every_recorded_report_gives_a_view_or_a_reason():
    assert len(RECORDED) >= 5
    for path in RECORDED:
        facts = facts_of(path)
        for kind in VIEWS:
            found = read(facts, kind)
            assert isinstance(found, Unrecorded) and found.reason or not isinstance(found, Unrecorded), (path, kind)
        if "target" in facts:  # an inspect report records its models only
            assert not isinstance(read(facts, TargetView), Unrecorded), path


def test_the_measured_report_reads_as_recorded():
    facts = facts_of(REPO / "tests" / "data" / "reports" / "h100-measured.json")
    target, cpu, gpu = read(facts, TargetView), read(facts, CpuView), read(facts, GpuView)
    assert target.python_minor == "3.12"
    assert (target.torch_build.build_version, target.torch_build.cuda) == ("2.11.0+cu130", "13.0")
    assert list(target.families) == ["cu13"]
    assert target.installer_command("install", ["numpy<2"]) == "/opt/torch/.venv/bin/python3 -m pip install 'numpy<2'"
    assert cpu.torch_avx2 and cpu.torch_avx512 and cpu.usable_cpus == 16
    assert gpu.driver_version == "580.159.04" and gpu.gpus


def test_a_failed_collector_is_unrecorded_with_its_error():
    facts = facts_of(REPO / "tests" / "data" / "reports" / "gpu-collector-failed.json")
    found = read(facts, GpuView)
    assert found == Unrecorded("gpu facts failed: CollectorError: NVML query timed out after 15.0s", "gpu",
                               failure="CollectorError: NVML query timed out after 15.0s")
    assert read({}, GpuView) == Unrecorded("no gpu facts in the report", "gpu")


def test_wrong_shapes_give_a_view_or_a_reason_never_an_exception():
    seen = 0
    for case, facts in wrong_shapes():
        for kind in VIEWS:
            found = read(facts, kind)
            assert not isinstance(found, Unrecorded) or found.reason, (case, kind)
            seen += 1
    assert seen > 1000


def test_a_wrong_shape_is_named_where_it_is_read():
    facts = facts_of(REPO / "tests" / "data" / "reports" / "cpu-only.json")
    facts["target"]["distributions"] = 7
    found = read(facts, TargetView)
    assert found == Unrecorded("target facts of an unexpected shape in the report (TypeError)", "target", shape="TypeError")
    assert readers.python_minor(facts).reason == "target facts of an unexpected shape in the report (TypeError)"
    facts["cpu"]["flags"] = [1]
    assert readers.torch_cpu_capability(facts).reason == "cpu and environ facts of an unexpected shape in the report (TypeError)"


def test_python_minor_is_unknown_where_the_report_does_not_say():
    facts = facts_of(REPO / "tests" / "data" / "reports" / "cpu-only.json")
    del facts["target"]["python"]["version_info"]
    assert read(facts, TargetView).python_minor is None
    assert readers.python_minor(facts) == "?"


def test_views_are_built_once_per_cached_facts():
    facts = CachedFacts(facts_of(REPO / "tests" / "data" / "reports" / "h100-measured.json"))
    assert facts.view(TargetView) is read(facts, TargetView)
    assert dict(facts) == facts.raw


def test_a_check_over_a_section_of_the_wrong_shape_crashes_visibly_and_the_others_run():
    facts = facts_of(REPO / "tests" / "data" / "reports" / "cpu-only.json")
    facts["target"]["distributions"] = 7
    checks, _ = load_checks()
    _, runs = run_checks(checks, facts)
    by_id = {r.id: r for r in runs}
    assert by_id["wheels.mixed-cuda-families"].status is CheckStatus.CRASHED
    assert "target facts of an unexpected shape" in by_id["wheels.mixed-cuda-families"].reason
    assert by_id["wsl.kernel"].status is not CheckStatus.CRASHED


def test_skip_reasons_keep_the_words_of_check():
    gpu_check = next(c for c in load_checks()[0] if c.id == "cuda.driver-too-old")
    failed = facts_of(REPO / "tests" / "data" / "reports" / "gpu-collector-failed.json")
    assert run_one(gpu_check, failed)[1].reason == "gpu facts could not be gathered: CollectorError: NVML query timed out after 15.0s"
    del failed["gpu"]
    assert run_one(gpu_check, failed)[1].reason == "no gpu facts were recorded"


@pytest.mark.parametrize("package", ["fix", "compare", "fleet"])
def test_fix_compare_and_fleet_do_not_import_checks(package):
    for path in sorted((REPO / "envdoctor" / package).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names] if isinstance(node, ast.Import) else []
            assert not any(n == "envdoctor.checks" or n.startswith("envdoctor.checks.") for n in names), f"{path.name} imports {names}"


def test_a_driver_of_the_wrong_shape_spoils_only_its_readers():
    facts = facts_of(REPO / "tests" / "data" / "reports" / "h100-cu130.json")
    facts["gpu"]["driver"] = "580.65.06"
    gpu = read(facts, GpuView)
    assert gpu.gpus and readers.gpu_architecture(facts) == "9.0"
    with pytest.raises(UnusableFacts):
        gpu.driver_version
    assert readers.driver(facts) == Unrecorded("gpu facts of an unexpected shape in the report (TypeError)", "gpu", shape="TypeError")
