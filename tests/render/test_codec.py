"""The report's codec: every recorded report written back as it was read, key for key and byte for byte,
a recorded value of the wrong shape refused with the errors the reader turns into one line, and a
command's report encoded once for everything that leaves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO, TEST_DATA, run_envdoctor
from envdoctor import codec
from envdoctor.codec import decode, encode
from envdoctor.model import CheckRun, CheckStatus, Remedy, Report
from envdoctor.probe.result import ProbeResult, StageResult

RECORDED = sorted([*(TEST_DATA / "reports").glob("*.json"), *(TEST_DATA / "render" / "recorded").glob("*.json"), REPO / "reports" / "samples" / "h100-cu130.json"])


@pytest.mark.parametrize("path", RECORDED, ids=[p.name for p in RECORDED])
def test_a_recorded_report_is_written_back_as_it_was_read(path: Path):
    """Byte for byte since the diagnosis section (1.1); an older report gains only its empty diagnosis (and
    its probe the library messages it did not record)."""
    recorded = json.loads(path.read_text(encoding="utf-8"))
    written = encode(decode(Report, recorded))
    if "diagnosis" not in recorded:
        assert written.pop("diagnosis") == []
    assert json.dumps(written, indent=2) == json.dumps(recorded, indent=2)
    if recorded["probe"] is not None:
        probe = encode(decode(ProbeResult, recorded["probe"]))
        assert encode(decode(ProbeResult, probe)) == probe and {**probe, **recorded["probe"]} == probe


def test_the_json_differs_from_the_fields_only_where_they_say():
    report = Report("1.0", "2026-01-01T00:00:00+00:00", "python", {}, checks=(CheckRun("a.b", CheckStatus.PASSED, 1.23456),), timings_ms={"judge": 2.00049})
    data = encode(report)
    assert list(data) == ["schema_version", "tool", "created", "target_python", "facts", "diagnosis", "findings", "checks", "probe", "timings_ms"]
    assert data["tool"] == {"name": "envdoctor", "version": "1.0"}
    assert data["checks"] == [{"id": "a.b", "status": "passed", "duration_ms": 1.235, "reason": ""}]
    assert data["timings_ms"] == {"judge": 2.0}
    assert list(encode(Report("1.0", "now", "python", {}, run={"ending": {}}))).pop() == "run"
    assert encode(Remedy("Unset it:", "unset X")) == {"summary": "Unset it:", "command": "unset X"}


def test_what_older_reports_leave_out_is_read_as_they_meant_it():
    stage = decode(StageResult, {"id": "import_torch", "status": "passed", "details": None})
    assert (stage.title, stage.duration_s, stage.details) == ("import_torch", 0.0, {})
    assert decode(CheckRun, {"id": "a.b", "status": "found", "duration_ms": "1.5"}).duration_ms == 1.5


@pytest.mark.parametrize("data, error", [
    ("not an object", TypeError),
    ({"status": "passed", "duration_ms": 1}, KeyError),
    ({"id": "a.b", "status": "lost", "duration_ms": 1}, ValueError),
    ({"id": "a.b", "status": "passed", "duration_ms": "slow"}, ValueError),
    ({"id": "a.b", "status": "passed", "duration_ms": None}, TypeError),
])
def test_a_value_of_the_wrong_shape_is_refused(data, error):
    with pytest.raises(error):
        decode(CheckRun, data)


def encoded_reports(monkeypatch) -> list:
    """The reports codec.encode is given from now on (the parts it encodes on the way are not counted)."""
    reports: list = []
    real = codec.encode

    def counting(value, text=codec.same):
        if isinstance(value, Report):
            reports.append(value)
        return real(value, text)

    monkeypatch.setattr(codec, "encode", counting)
    return reports


SOURCES = {
    "this machine": ["--no-probe", "--only", "threads"],
    "a recorded report": ["--from", str(REPO / "reports" / "samples" / "h100-cu130.json"), "--report-dir", "reports"],
}


@pytest.mark.parametrize("source", list(SOURCES))
def test_check_encodes_its_report_once_for_the_saved_file_and_json(tmp_path, monkeypatch, source):
    encoded = encoded_reports(monkeypatch)
    run = run_envdoctor("check", *SOURCES[source], "--json", "out.json", "--markdown", "out.md", cwd=tmp_path)
    assert run.returncode in (0, 1), run
    (saved,) = (tmp_path / "reports").glob("envdoctor-*.json")
    assert len(encoded) == 1
    assert saved.read_bytes() == (tmp_path / "out.json").read_bytes()
    assert (tmp_path / "out.md").read_text(encoding="utf-8").strip()
