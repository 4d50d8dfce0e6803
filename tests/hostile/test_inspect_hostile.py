"""Hostile and broken files: one line and exit 2, no unbounded reads, nothing executed.

These models are built by hand (no SB3 needed): a zip with a `data` member in SB3's JSON format.
"""

from __future__ import annotations

import base64
import collections
import io
import pickle
import struct
import sys
import zipfile
from pathlib import Path

import pytest

from envdoctor.sb3 import pickle_vm
from envdoctor.sb3.classify import classify
from conftest import TEST_DATA, run_envdoctor
from helpers.model_files import model_zip
from helpers.refusals import one_line_error

sys.path.insert(0, str(TEST_DATA / "sb3"))
from splice import dangerous_payload  # noqa: E402


def entry(value) -> dict:
    return {":type:": "<class 'function'>", ":serialized:": base64.b64encode(pickle.dumps(value, protocol=5)).decode()}


def test_missing_file(tmp_path):
    assert "no such file" in one_line_error(run_envdoctor("inspect", str(tmp_path / "nope.zip")))


def test_not_a_zip(tmp_path):
    path = tmp_path / "model.zip"
    path.write_text("hello")
    assert "not a zip" in one_line_error(run_envdoctor("inspect", str(path)))


def test_truncated_zip(tmp_path):
    path = model_zip(tmp_path / "model.zip", {"gamma": 0.99})
    path.write_bytes(path.read_bytes()[:-30])
    assert "truncated" in one_line_error(run_envdoctor("inspect", str(path)))


def test_zip_without_data(tmp_path):
    path = tmp_path / "model.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("weights.bin", b"\0" * 10)
    assert "no `data` member" in one_line_error(run_envdoctor("inspect", str(path)))


def test_invalid_json(tmp_path):
    path = model_zip(tmp_path / "model.zip", "{not json")
    assert "not valid JSON" in one_line_error(run_envdoctor("sanitize", str(path), "-o", str(tmp_path / "out.zip"), child=True))  # the command's wiring in a real `python -m envdoctor`


def model_with_central_field(path: Path, offset: int, layout: str, value: int) -> Path:
    """A one-float model whose first central-directory record (`data`'s) has the field at `offset`
    (a struct `layout`) set to `value`."""
    model_zip(path, {"gamma": 0.99})
    raw = bytearray(path.read_bytes())
    struct.pack_into(layout, raw, raw.index(b"PK\x01\x02") + offset, value)
    path.write_bytes(bytes(raw))
    return path


def test_member_declaring_a_huge_size_is_refused_unread(tmp_path):
    path = model_with_central_field(tmp_path / "model.zip", 24, "<I", 0xFFFFFFF0)  # its uncompressed size: ~4 GiB
    assert "declares 4294967280 bytes" in one_line_error(run_envdoctor("inspect", str(path)))


def test_encrypted_member_is_an_input_error(tmp_path):
    path = model_with_central_field(tmp_path / "model.zip", 8, "<H", 0x1)  # `data`'s flags: encrypted
    assert "password required" in one_line_error(run_envdoctor("inspect", str(path)))


def test_zip_of_an_unknown_version_is_an_input_error(tmp_path):
    path = model_with_central_field(tmp_path / "model.zip", 6, "<B", 99)  # "version needed to extract": 9.9
    assert "zip file version 9.9" in one_line_error(run_envdoctor("inspect", str(path)))


def test_invalid_base64_is_a_corrupt_entry_not_an_input_error(tmp_path):
    path = model_zip(tmp_path / "model.zip", {"learning_rate": {":type:": "<class 'function'>", ":serialized:": "not base64!"}})
    run = run_envdoctor("inspect", str(path), "--json", "-")
    assert run.returncode == 1, run
    assert [f["id"] for f in run.json()["findings"]] == ["sb3.corrupt-entry"]


def test_dangerous_payload_is_flagged_and_not_run(tmp_path):
    marker = tmp_path / "PWNED"
    path = model_zip(tmp_path / "model.zip", {"learning_rate": {":type:": "<class 'function'>", ":serialized:": dangerous_payload(f"touch {marker}")}})
    run = run_envdoctor("inspect", str(path), "--json", "-", child=True)  # a payload run by mistake would run in a child
    assert [f["id"] for f in run.json()["findings"]] == ["sb3.dangerous-pickle"]
    assert "posix.system" in run.json()["findings"][0]["explanation"]
    assert not marker.exists()


@pytest.mark.parametrize("payload, reason", [
    (b"\x80\x05K\x01", "exhausted before seeing STOP"),
    (b"\x80\x05\x82\x01.", "extension code"),
    (b"\x80\x05\x8e\xff\xff\xff\xff\xff\xff\x00\x00abc.", "bytes8"),
    (b"", "empty"),
])
def test_broken_pickles_are_corrupt(payload, reason):
    with pytest.raises(pickle_vm.CorruptPickle, match=reason):
        pickle_vm.run(payload)


def test_code_referring_to_dangerous_names_is_dangerous():
    import cloudpickle

    def schedule(_):
        return __import__("os").system("true") or 0.1

    text = base64.b64encode(cloudpickle.dumps(schedule)).decode()
    facts = classify("clip_range", {":serialized:": text}, "3.11")
    assert facts["verdict"] == "dangerous"
    assert any("builtin __import__" in r for r in facts["reasons"]) and any("attribute system" in r for r in facts["reasons"])


def test_everyday_schedule_code_is_code_not_dangerous():
    import math

    import cloudpickle

    def cosine(progress):  # math from a closure cell, builtins, a list method
        values = [0.1, 0.2]
        values.remove(0.2)
        return max(0.0, values[0] * (1 + math.cos(math.pi * (1 - progress))) / 2)

    def imports_math(progress):
        import math as m

        return m.exp(-progress)

    for schedule in (cosine, imports_math):
        facts = classify("learning_rate", {":serialized:": base64.b64encode(cloudpickle.dumps(schedule)).decode()}, "3.11")
        assert facts["verdict"] == "code", facts["reasons"]
    assert [f["imports"] for f in facts["functions"]] == [["math"]]


def test_code_importing_anything_but_math_is_dangerous_even_if_harmless():
    import cloudpickle

    def with_os(progress):  # harmless today, but os reaches everything: unknown is never clean
        import os

        return 0.1 if os.path.join("a", "b") else 0.0

    facts = classify("learning_rate", {":serialized:": base64.b64encode(cloudpickle.dumps(with_os)).decode()}, "3.11")
    assert facts["verdict"] == "dangerous" and any("imports the module os" in r for r in facts["reasons"])


def test_code_importing_subprocess_inside_itself_is_dangerous():
    import cloudpickle

    def schedule(_):
        import subprocess

        return subprocess.run(["true"]).returncode or 0.1

    facts = classify("clip_range", {":serialized:": base64.b64encode(cloudpickle.dumps(schedule)).decode()}, "3.11")
    assert facts["verdict"] == "dangerous" and any("imports the module subprocess" in r for r in facts["reasons"])


def stack_global(module: bytes, name: bytes) -> bytes:
    return b"\x8c" + bytes([len(module)]) + module + b"\x8c" + bytes([len(name)]) + name + b"\x93"


@pytest.mark.parametrize("payload", [
    stack_global(b"zipfile", b"os.system") + b"\x8c\x04true\x85R.",  # protocol 4 resolves dotted names
    stack_global(b"operator", b"methodcaller") + b"\x8c\x06system\x8c\x04true\x86R" + stack_global(b"zipfile", b"os") + b"\x85R.",
], ids=["dotted-name", "methodcaller"])
def test_reaching_os_system_through_another_module_is_dangerous(payload):
    payload = b"\x80\x04" + payload
    assert pickle.loads(payload) == 0  # the real unpickler runs `true`: the payload is live
    facts = classify("learning_rate", {":serialized:": base64.b64encode(payload).decode()}, "3.11")
    assert facts["verdict"] == "dangerous", facts["globals"]


def test_plain_values_are_data_and_a_reference_to_the_users_own_code_contains_code():
    payload = b"\x80\x04" + stack_global(b"my_project.schedules", b"decaying") + b"."
    facts = classify("learning_rate", {":serialized:": base64.b64encode(payload).decode()}, "3.11")
    assert facts["verdict"] == "code" and facts["globals"] == ["my_project.schedules.decaying"]
    assert facts["reasons"] == ["names my_project.schedules.decaying"]
    assert facts["modules"] == ["my_project.schedules"]
    assert classify("x", entry({"a": [1.5, b"\x00"], "b": (None, True)}), "3.11")["verdict"] == "data"


def test_a_standard_library_reference_is_dangerous_not_a_reference():
    facts = classify("x", entry({"b": zipfile.ZipInfo}), "3.11")
    assert facts["verdict"] == "dangerous" and facts["reasons"] == ["names zipfile.ZipInfo"]


@pytest.mark.parametrize("value", ["nan", "inf", "-0.1"])
def test_sanitize_refuses_a_schedule_number_sb3_cannot_train_with(tmp_path, value):
    path = model_zip(tmp_path / "model.zip", {"gamma": 0.99})
    error = one_line_error(run_envdoctor("sanitize", str(path), "-o", str(tmp_path / "out.zip"), f"--learning-rate={value}"))
    assert "--learning-rate" in error and not (tmp_path / "out.zip").exists()


def test_sanitize_into_a_folder_or_nowhere_is_an_input_error(tmp_path):
    path = model_zip(tmp_path / "model.zip", {"gamma": 0.99})
    assert "is a folder" in one_line_error(run_envdoctor("sanitize", str(path), "-o", str(tmp_path), "--force"))
    assert "cannot write" in one_line_error(run_envdoctor("sanitize", str(path), "-o", "/proc/out.zip"))


def test_sanitize_of_a_damaged_member_is_an_input_error_and_leaves_nothing(tmp_path):
    path = model_zip(tmp_path / "model.zip", {"gamma": 0.99})
    weights = io.BytesIO()
    with zipfile.ZipFile(weights, "w") as inner:  # a torch zip: a state dict, and bytes no pickle reads
        inner.writestr("archive/data.pkl", pickle.dumps(collections.OrderedDict(bias=0.5), protocol=2))
        inner.writestr("archive/data/0", b"weights" * 100)
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("policy.pth", weights.getvalue())
    raw = bytearray(path.read_bytes())
    start = raw.index(b"weights")
    raw[start:start + 7] = b"WEIGHTS"  # the stored bytes no longer match their CRC
    path.write_bytes(bytes(raw))
    assert "'policy.pth' cannot be copied" in one_line_error(run_envdoctor("sanitize", str(path), "-o", str(tmp_path / "out.zip")))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.zip"]
