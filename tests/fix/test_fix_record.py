"""Records and the restore plan computed from two freezes (no installer runs here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor.errors import UsageError
from envdoctor.fix import record as records
from envdoctor.fix.installer import Installer
from envdoctor.fix.plan import StepStatus
from envdoctor.fix.rollback import restore_plan

PY = "/envs/seed/bin/python"
RECORDED = (
    "filelock==3.13.1",
    "nvidia-cublas-cu12==12.1.3.1",
    "torch==2.3.1+cu121",
    "# Editable install with no version control (mypkg==0.1)",
    "-e /src/mypkg",
)


def record(tmp_path: Path, installer: Installer = Installer("pip", PY)) -> records.Record:
    return records.Record(tmp_path, "2026-11-22T15:00:00+00:00", installer, RECORDED, ())


def test_restore_removes_what_was_added_and_reinstalls_what_changed(tmp_path):
    now = ("filelock==3.13.1", "torch==1.13.1+cu116", "typing_extensions==4.12.2", "-e /src/mypkg")
    remove, install = restore_plan(record(tmp_path), now).steps
    assert remove.argv == (PY, "-m", "pip", "uninstall", "-y", "typing-extensions")
    assert install.argv == (
        PY, "-m", "pip", "install", "--no-deps", "--extra-index-url", "https://download.pytorch.org/whl/cu121",
        "nvidia-cublas-cu12==12.1.3.1", "torch==2.3.1+cu121",
    )


def test_restore_of_an_unchanged_environment_has_nothing_to_do(tmp_path):
    plan = restore_plan(record(tmp_path), RECORDED)
    assert not plan.changes and all(s.status is StepStatus.SKIPPED for s in plan.steps)


def test_restore_with_uv(tmp_path):
    plan = restore_plan(record(tmp_path, Installer("uv", PY, "/usr/bin/uv")), RECORDED[:2])
    assert plan.steps[1].argv == ("/usr/bin/uv", "pip", "install", "--python", PY, "--no-deps", "--extra-index-url", "https://download.pytorch.org/whl/cu121", "torch==2.3.1+cu121", "-e", "/src/mypkg")


def test_record_round_trip(tmp_path):
    saved = records.finish(record(tmp_path), {"outcome": "applied"})
    loaded = records.load(tmp_path)
    assert loaded == records.load(tmp_path / "record.json") == saved


def test_a_report_is_not_a_record(tmp_path):
    (tmp_path / "report.json").write_text(json.dumps({"schema_version": "1.0"}))
    with pytest.raises(UsageError, match="is not an envdoctor fix record"):
        records.load(tmp_path / "report.json")


@pytest.mark.parametrize("document, message", [
    ({"kind": "envdoctor-fix-record"}, r"damaged envdoctor fix record: created is missing"),
    ({"kind": "envdoctor-fix-record", "created": "x", "installer": {"name": "pip"}, "freeze": [], "distributions": []}, r"damaged .*: installer/python is missing"),
    ({"kind": "envdoctor-fix-record", "created": "x", "installer": {"name": "pip", "python": PY}, "freeze": None, "distributions": []}, r"damaged .*: freeze must be array, not null"),
])
def test_a_damaged_record_is_a_usage_error(tmp_path, document, message):
    (tmp_path / "record.json").write_text(json.dumps(document))
    with pytest.raises(UsageError, match=message):
        records.load(tmp_path)


def test_a_record_nested_past_the_json_parser_is_a_usage_error_not_a_crash(tmp_path):
    (tmp_path / "record.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(UsageError, match=r"record\.json is nested deeper than any envdoctor fix record$"):
        records.load(tmp_path)


def test_a_huge_file_is_refused_without_reading_it_all(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 1024)
    (tmp_path / "record.json").write_text(json.dumps({"kind": "envdoctor-fix-record", "pad": "x" * 2048}))
    with pytest.raises(UsageError, match="larger than"):
        records.load(tmp_path)
