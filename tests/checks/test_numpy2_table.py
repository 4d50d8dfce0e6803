"""knowledge/numpy2.csv and the checks that read it: a recorded report of the test venv (NumPy 2) with
distributions added, judged again through `check --from`, so no package is imported or installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from conftest import assert_checks_ran, changed_report, findings_by_id, run_envdoctor
from envdoctor.knowledge import rows
from envdoctor.knowledge.numpy2 import table


@pytest.fixture(scope="session")
def recorded(tmp_path_factory) -> Path:
    """One real report of the test venv, recorded once per session."""
    folder = tmp_path_factory.mktemp("numpy2-report")
    run = run_envdoctor("check", "--no-probe", "--no-save", "--json", "-", cwd=folder)
    assert run.returncode in (0, 1), run
    path = folder / "report.json"
    path.write_text(run.stdout, encoding="utf-8")
    return path


def install(facts: dict, name: str, version: str, requires=()) -> None:
    """Record a distribution as the target script reports one."""
    facts["target"]["distributions"].append({"name": name, "version": version, "location": "/site-packages", "requires": list(requires)})


def set_version(facts: dict, name: str, version: str) -> None:
    [dist] = [d for d in facts["target"]["distributions"] if d["name"].lower() == name]
    dist["version"] = version


def numpy_findings_and_run(envdoctor, report: Path):
    """The numpy findings of `report` and the finished run."""
    run = envdoctor("check", "--from", str(report), "--only", "numpy", "--json", "-")
    assert run.returncode in (0, 1), run
    assert run.stderr == "" and "Traceback" not in run.stdout
    assert_checks_ran(run.json(), "numpy")
    return findings_by_id(run.json()), run


def python_of(report: Path) -> str:
    return json.loads(report.read_text(encoding="utf-8"))["facts"]["target"]["python"]["executable"]


def test_every_row_has_a_source_and_parses():
    loaded = rows("numpy2.csv")
    assert len(loaded) == len(table()) >= 20
    for row in loaded:
        assert row["source"].strip(), row["project"]
        first = Version(row["first_numpy2"])
        assert not row["requires_numpy2"] or Version(row["requires_numpy2"]) > first, row["project"]


def test_table_reader_semantics():
    known = table()
    assert known["scikit-learn"].built_for_numpy_1(Version("1.4.1.post1"))
    assert not known["scikit-learn"].built_for_numpy_1(Version("1.4.2"))
    opencv = known["opencv-python-headless"]
    assert opencv.requires_numpy_2(Version("4.12.0.88"), Version("3.11"))
    assert not opencv.requires_numpy_2(Version("4.11.0.86"), Version("3.11"))
    assert not opencv.requires_numpy_2(Version("4.12.0.88"), Version("3.8")), "NumPy 2 does not exist for Python 3.8"
    assert known["scipy"].first_requiring is None


def test_numpy_1_build_without_upper_bound_under_numpy_2(envdoctor, recorded, tmp_path):
    report = changed_report(recorded, tmp_path / "r.json", lambda f: install(f, "scipy", "1.11.4", ["numpy>=1.21.6"]))
    found, run = numpy_findings_and_run(envdoctor, report)
    assert run.returncode == 1
    [finding] = found["numpy.abi-mismatch"]
    assert finding["severity"] == "error"
    assert "scipy 1.11.4 (first built for NumPy 2: 1.13.0)" in finding["evidence"]["needs_numpy_1"]
    assert finding["evidence"]["first_built_for_numpy_2"] == {"scipy": "1.13.0"}
    python = python_of(report)
    assert [r["command"] for r in finding["remedies"]] == [f"{python} -m pip install 'numpy<2'", f"{python} -m pip install 'scipy>=1.13.0'"]


@pytest.mark.parametrize("version", ["1.13.0", "1.14.1", "2.0.0"])
def test_release_built_for_numpy_2_passes(envdoctor, recorded, tmp_path, version):
    report = changed_report(recorded, tmp_path / "r.json", lambda f: install(f, "scipy", version, ["numpy>=1.22.4"]))
    found, run = numpy_findings_and_run(envdoctor, report)
    assert "numpy.abi-mismatch" not in found and run.returncode == 0


def test_metadata_and_table_culprits_merge_into_one_line_each(envdoctor, recorded, tmp_path):
    def change(facts):
        install(facts, "tables", "3.10.0", ["numpy<2,>=1.20.0"])
        install(facts, "oldext", "0.9", ["numpy<2"])
        install(facts, "Scikit_Learn", "1.3.2", ["numpy<2.0,>=1.17.3"])

    [finding] = numpy_findings_and_run(envdoctor, changed_report(recorded, tmp_path / "r.json", change))[0]["numpy.abi-mismatch"]
    assert finding["evidence"]["needs_numpy_1"] == [
        "oldext 0.9 (numpy<2)",
        "Scikit_Learn 1.3.2 (numpy<2.0,>=1.17.3; first built for NumPy 2: 1.4.2)",
        "tables 3.10.0 (numpy<2,>=1.20.0)",  # built for NumPy 2, but its own metadata refuses it
    ]
    assert finding["remedies"][1]["command"].endswith("-m pip install 'oldext>0.9' 'scikit-learn>=1.4.2' 'tables>3.10.0'")


def test_release_requiring_numpy_2_under_numpy_1(envdoctor, recorded, tmp_path):
    def change(facts):
        set_version(facts, "numpy", "1.26.4")
        install(facts, "opencv-python-headless", "4.12.0.88", ['numpy<2.3.0,>=2; python_version >= "3.9"'])
        install(facts, "scipy", "1.11.4", ["numpy>=1.21.6"])

    report = changed_report(recorded, tmp_path / "r.json", change)
    found, run = numpy_findings_and_run(envdoctor, report)
    assert run.returncode == 0 and "numpy.abi-mismatch" not in found
    [finding] = found["numpy.too-old"]
    assert finding["severity"] == "warning"
    assert finding["evidence"]["requires_numpy_2"] == ["opencv-python-headless 4.12.0.88 (numpy<2.3.0,>=2; requires NumPy 2 since 4.12.0.88)"]
    python = python_of(report)
    assert [r["command"] for r in finding["remedies"]] == [
        f"{python} -m pip install 'numpy>=2'",
        f"{python} -m pip install 'opencv-python-headless<4.12.0.88'",
    ]


def test_requiring_numpy_2_does_not_bind_on_python_3_8(envdoctor, recorded, tmp_path):
    def change(facts):
        set_version(facts, "numpy", "1.24.4")
        facts["target"]["python"]["version_info"] = [3, 8, 18]
        facts["target"]["python"]["version"] = "3.8.18"
        install(facts, "opencv-python", "4.12.0.88", ['numpy<2.0; python_version < "3.9"'])

    found, run = numpy_findings_and_run(envdoctor, changed_report(recorded, tmp_path / "r.json", change))
    assert found == {} and run.returncode == 0


@pytest.mark.parametrize("version", ["", "not a version", "1.11.4; rm -rf /", "v" * 10_000])
def test_unparsable_versions_are_skipped_not_crashed(envdoctor, recorded, tmp_path, version):
    found, run = numpy_findings_and_run(envdoctor, changed_report(recorded, tmp_path / "r.json", lambda f: install(f, "scipy", version)))
    assert found == {} and run.returncode == 0
