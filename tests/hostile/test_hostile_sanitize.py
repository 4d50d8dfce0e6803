"""Hostile model zips against `inspect`, `sanitize` and `check --model`: one line and exit 2 (or a clean
report), the input never changed, nothing left behind, no number SB3 cannot train with.

Zips are built byte by byte (helpers/model_files.py's raw_zip), so names with NUL, duplicate members, symlink entries,
lying sizes and flags are as easy to make as a genuine model.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import pickle
import socket
import stat
import sys
import zipfile
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Union

import pytest

from envdoctor.knowledge import sb3_advice
from envdoctor.knowledge.sb3_schedules import SCHEDULE_KEYS
from envdoctor.sb3 import system_info
from conftest import TEST_DATA, run_envdoctor
from helpers.model_files import Member, model_members, raw_zip, stored, torch_zip
from helpers.refusals import one_line_error

sys.path.insert(0, str(TEST_DATA / "sb3"))
from splice import dangerous_payload  # noqa: E402

DEFAULT_LR = 3e-4
CORRUPT = {":type:": "<class 'function'>", ":serialized:": "not base64!"}
FAST = 60  # seconds: every bounded command here answers in about one


# ---------------------------------------------------------------- members of other shapes (raw_zip and the rest: helpers/model_files.py)


def deflated(name: Union[str, bytes], content: bytes, **declared: Any) -> Member:
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    return Member(name, packer.compress(content) + packer.flush(), len(content), zlib.crc32(content), method=zipfile.ZIP_DEFLATED, **declared)


def zeros_bomb(name: str, mib: int) -> Member:
    """`mib` MiB of zeros in about 1 KiB per MiB: one self-contained deflate block repeated."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = packer.compress(bytes(2 ** 20)) + packer.flush(zlib.Z_FULL_FLUSH)
    return Member(name, block * mib + packer.flush(), min(mib * 2 ** 20, 0xFFFFFFFE), 0, method=zipfile.ZIP_DEFLATED)


def optimizer_pickle(lr: Any) -> bytes:
    return pickle.dumps({"state": {}, "param_groups": [{"lr": lr, "betas": (0.9, 0.999), "params": [0, 1]}]}, protocol=2)


def optimizer_member(lr: Any = 0.001) -> Member:
    return stored("policy.optimizer.pth", torch_zip(stored("archive/data.pkl", optimizer_pickle(lr))))


def entry_of(payload: bytes) -> Dict[str, str]:
    return {":type:": "<class 'function'>", ":serialized:": base64.b64encode(payload).decode()}


def closure_entry(value: float) -> Dict[str, str]:
    """A schedule pickled by value (a closure holding `value`), as SB3 saves a lambda."""
    import cloudpickle

    def make(constant):
        def schedule(_progress):
            return constant

        return schedule

    return entry_of(cloudpickle.dumps(make(value)))


# ---------------------------------------------------------------- running and judging


@dataclass
class Model:
    """A hostile model file and the folder it lies in, with what they held before a command ran."""

    path: Path

    def __post_init__(self):
        self.digest = digest(self.path)
        self.listing = listing(self.path.parent)

    @property
    def out(self) -> Path:
        return self.path.parent / "out.zip"

    def run(self, command: str, *extra: str, timeout: float = FAST):
        args = {
            "inspect": ("inspect", str(self.path), "--json", "-"),
            "sanitize": ("sanitize", str(self.path), "-o", str(self.out), *extra),
            "check": ("check", "--model", str(self.path), "--no-probe", "--only", "sb3", "--no-save", "--json", "-"),
        }[command]
        run = run_envdoctor(*args, cwd=self.path.parent, timeout=timeout)
        assert "Traceback" not in run.stderr and run.returncode != 3, run
        assert digest(self.path) == self.digest, "the input was modified"
        return run

    def refused(self, command: str, *extra: str, timeout: float = FAST) -> str:
        """The one-line error of a refused command; nothing was written beside the model."""
        line = one_line_error(self.run(command, *extra, timeout=timeout))
        assert listing(self.path.parent) == self.listing, "a refused command left a file behind"
        return line

    def sanitized(self, *extra: str) -> Dict[str, Any]:
        run = self.run("sanitize", *extra)
        assert run.returncode == 0, run
        assert listing(self.path.parent) == self.listing | {"out.zip"}, "a temporary file was left behind"
        with zipfile.ZipFile(self.out) as archive:
            assert archive.testzip() is None
            return json.loads(archive.read("data"))

    def inspected(self) -> Dict[str, Any]:
        run = self.run("inspect")
        assert run.returncode in (0, 1), run
        return run.json()["facts"]["models"]["files"][0]


def usable(value: Any) -> bool:
    """What a sanitised schedule may hold: a finite rate of 0 or more, or None (clip_range_vf off)."""
    return isinstance(value, float) and math.isfinite(value) and value >= 0 or value is None


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(folder: Path) -> set:
    return set(os.listdir(folder))


def write_model(tmp_path: Path, members: Sequence[Member], **zip_options: Any) -> Model:
    path = tmp_path / "model.zip"
    path.write_bytes(raw_zip(members, **zip_options))
    return Model(path)


COMMANDS = ("inspect", "sanitize", "check")


# ---------------------------------------------------------------- 1. data nested too deeply, or of the wrong types


def nested(depth: int, closed: bool = True) -> bytes:
    return b'{"a": ' + b"[" * depth + (b"]" * depth + b"}" if closed else b"")


DEEP = {
    "unclosed-100k": nested(100_000, closed=False),
    "closed-100k": nested(100_000),
    "objects-5k": b'{"a": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5001,
    "closed-500": nested(500),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("data", DEEP.values(), ids=DEEP.keys())
def test_deeply_nested_data_is_a_one_line_error(tmp_path, data, command):
    model = write_model(tmp_path, model_members(data))
    assert "nested" in model.refused(command)


def test_a_number_too_long_for_python_is_a_one_line_error(tmp_path):
    model = write_model(tmp_path, model_members(b'{"gamma": ' + b"1" * 5000 + b"}"))
    assert "not valid JSON" in model.refused("inspect")


WRONG_TYPES = {
    "serialized-number": {"learning_rate": {":serialized:": 5}},
    "serialized-null-type-list": {"learning_rate": {":serialized:": None, ":type:": [1, 2]}},
    "serialized-list": {"clip_range": {":serialized:": ["x"]}},
    "serialized-object": {"clip_range_vf": {":serialized:": {"a": 1}, ":type:": {"b": 2}}},
    "learning-rate-list": {"learning_rate": [1, 2], "lr_schedule": CORRUPT},
    "learning-rate-text": {"learning_rate": "0.1", "lr_schedule": CORRUPT},
    "learning-rate-bool": {"learning_rate": True, "lr_schedule": CORRUPT},
    "learning-rate-object": {"learning_rate": {"a": 1}, "lr_schedule": CORRUPT},
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("data", WRONG_TYPES.values(), ids=WRONG_TYPES.keys())
def test_data_of_the_wrong_types_never_gives_a_traceback(tmp_path, data, command):
    model = write_model(tmp_path, model_members({"gamma": 0.99, **data}))
    run = model.run(command)
    assert run.returncode in (0, 1), run
    if command == "sanitize":
        written = json.loads(zipfile.ZipFile(model.out).read("data"))
        assert all(usable(written[key]) for key in SCHEDULE_KEYS if key in written), written


def test_a_corrupt_entry_outside_the_schedules_is_refused_by_name(tmp_path):
    model = write_model(tmp_path, model_members({"policy_class": {":serialized:": {}}}))
    assert "policy_class" in model.refused("sanitize")


# ---------------------------------------------------------------- 2. the optimizer state: damaged, encrypted, bombs


def pkl(**declared: Any) -> Member:
    return stored("archive/data.pkl", optimizer_pickle(0.001), **declared)


def with_bad_crc(member: Member) -> Member:
    member.crc ^= 0xFFFF
    return member


INNER = {  # the torch zip inside policy.optimizer.pth is damaged; the outer member itself is sound
    "inner-bad-crc": lambda: torch_zip(with_bad_crc(pkl())),
    "inner-encrypted": lambda: torch_zip(pkl(flags=0x1)),
    "inner-unknown-compression": lambda: torch_zip(pkl(method=99)),
    "inner-truncated": lambda: torch_zip(pkl())[:-30],
    "inner-not-a-zip": lambda: b"\x80\x02}q\x00." * 10,
    "inner-pickle-corrupt": lambda: torch_zip(stored("archive/data.pkl", b"\x80\x02K")),
    "inner-pickle-declares-4gib": lambda: torch_zip(Member("archive/data.pkl", b"x" * 10, 0xFFFFFFF0, 0)),
    "inner-pickle-bomb": lambda: torch_zip(zeros_bomb("archive/data.pkl", 1024)),
    "inner-100k-members": lambda: raw_zip([stored(f"archive/{i}", b"") for i in range(100_000)] + [pkl()]),
    "inner-lr-is-text": lambda: torch_zip(stored("archive/data.pkl", optimizer_pickle("0.1"))),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("inner", INNER.values(), ids=INNER.keys())
def test_a_damaged_optimizer_state_means_no_learning_rate_found_there(tmp_path, inner, command):
    """Inspection finds no rate there; sanitize never copies weights torch's weights_only loader would refuse."""
    model = write_model(tmp_path, [*model_members({"learning_rate": CORRUPT}), stored("policy.optimizer.pth", inner())])
    if command == "sanitize" and inner is INNER["inner-lr-is-text"]:
        assert model.sanitized()["learning_rate"] == DEFAULT_LR
    elif command == "sanitize":
        error = model.refused(command)
        assert "member policy.optimizer.pth" in error and "weights_only=True" in error
    elif command == "inspect":
        facts = model.inspected()
        assert facts["optimizer_lr"] is None
        assert facts["schedules"]["learning_rate"]["value"] == DEFAULT_LR
    else:
        assert model.run(command).returncode == 1


OUTER = {  # the policy.optimizer.pth member itself cannot be read
    "encrypted": lambda: replace(optimizer_member(), flags=0x1),
    "unknown-compression": lambda: replace(optimizer_member(), method=99),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("outer", OUTER.values(), ids=OUTER.keys())
def test_an_unreadable_optimizer_member_is_skipped_by_inspection_and_refused_by_sanitize(tmp_path, outer, command):
    model = write_model(tmp_path, [*model_members({"learning_rate": CORRUPT}), outer()])
    if command == "sanitize":
        assert "member policy.optimizer.pth (could not be judged" in model.refused(command)
    elif command == "inspect":
        assert model.inspected()["schedules"]["learning_rate"]["value"] == DEFAULT_LR
    else:
        assert model.run(command).returncode == 1


@pytest.mark.parametrize("command", COMMANDS)
def test_an_optimizer_bomb_is_skipped_or_refused_at_once(tmp_path, command):
    """4 GiB of zeros in 4 MiB: inflating it takes 15 s to read and a minute to copy, so 6 s is plenty."""
    model = write_model(tmp_path, [*model_members({"learning_rate": CORRUPT}), zeros_bomb("policy.optimizer.pth", 4095)])
    if command == "sanitize":
        assert "zip bomb" in model.refused(command, timeout=6)
        return
    run = model.run(command, timeout=6)
    assert run.returncode == 1, run
    if command == "inspect":
        assert run.json()["facts"]["models"]["files"][0]["schedules"]["learning_rate"]["value"] == DEFAULT_LR


@pytest.mark.parametrize("pack", (stored, deflated), ids=("stored", "deflated"))
def test_a_sound_optimizer_state_gives_its_last_learning_rate(tmp_path, pack):
    inner = torch_zip(stored("archive/data.pkl", optimizer_pickle(0.002)))
    model = write_model(tmp_path, [*model_members({"learning_rate": CORRUPT}), pack("policy.optimizer.pth", inner)])
    assert model.inspected()["optimizer_lr"] == 0.002
    assert model.sanitized()["learning_rate"] == 0.002


LYING_SIZES = {
    "stored-declares-4gib": lambda m: replace(m, size=0xFFFFFFF0),
    "deflated-beyond-deflate": lambda m: replace(m, data=zlib.compress(m.data)[2:-4], size=0xFFFFFFF0, method=zipfile.ZIP_DEFLATED),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("lie", LYING_SIZES.values(), ids=LYING_SIZES.keys())
def test_an_optimizer_member_declaring_more_than_it_can_hold_is_refused_unread(tmp_path, lie, command):
    model = write_model(tmp_path, [*model_members({"learning_rate": CORRUPT}), lie(optimizer_member())])
    assert "'policy.optimizer.pth' declares 4294967280 bytes" in model.refused(command)


# ---------------------------------------------------------------- 3. where sanitize writes


def plain_model(tmp_path: Path) -> Model:
    return write_model(tmp_path, model_members({"gamma": 0.99, "learning_rate": CORRUPT}))


def symlink_to_file(out: Path) -> None:
    target = out.parent / "elsewhere" / "kept.zip"
    target.parent.mkdir()
    target.write_bytes(b"keep me")
    out.symlink_to(target)


def special(kind: str) -> Callable[[Path], None]:
    def make(out: Path) -> None:
        if kind == "fifo":
            os.mkfifo(out)
        elif kind == "socket":
            server = socket.socket(socket.AF_UNIX)
            server.bind(str(out))
            server.close()
        else:
            try:
                os.mknod(out, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a twin of /dev/null
            except PermissionError:
                pytest.skip("creating a device node needs root")

    return make


OUTPUTS = {
    "symlink-to-file": symlink_to_file,
    "dangling-symlink": lambda out: out.symlink_to(out.parent / "nowhere" / "x.zip"),
    "symlink-to-folder": lambda out: out.symlink_to(out.parent),
    "fifo": special("fifo"),
    "socket": special("socket"),
    "device": special("device"),
}


@pytest.mark.parametrize("force", ((), ("--force",)), ids=("no-force", "force"))
@pytest.mark.parametrize("make", OUTPUTS.values(), ids=OUTPUTS.keys())
def test_sanitize_writes_only_regular_files_never_through_a_link(tmp_path, make, force):
    folder = tmp_path / "work"
    folder.mkdir()
    model = plain_model(folder)
    if len(str(model.out)) > 100 and make is OUTPUTS["socket"]:
        pytest.skip("the folder's path is too long for a unix socket")
    make(model.out)
    before = os.lstat(model.out)
    model.listing = listing(folder)
    error = model.refused("sanitize", *force)
    assert "out.zip" in error
    after = os.lstat(model.out)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino), "OUT was replaced"
    if (folder / "elsewhere" / "kept.zip").exists():
        assert (folder / "elsewhere" / "kept.zip").read_bytes() == b"keep me"


def test_sanitize_replaces_a_regular_file_only_with_force(tmp_path):
    model = plain_model(tmp_path)
    model.out.write_bytes(b"old")
    model.listing = listing(tmp_path)
    assert "--force" in model.refused("sanitize")
    assert model.out.read_bytes() == b"old"
    written = model.sanitized("--force")
    assert written["learning_rate"] == DEFAULT_LR
    assert stat.S_ISREG(os.lstat(model.out).st_mode) and not os.lstat(model.out).st_mode & 0o007


# ---------------------------------------------------------------- 4. numbers SB3 cannot train with, found in the file


BAD_NUMBERS = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf"), "negative": -0.5}


def bad_plain_learning_rate(bad: float) -> List[Member]:
    """learning_rate stored as a plain number; lr_schedule code whose closure holds 0.001."""
    return model_members({"learning_rate": bad, "lr_schedule": closure_entry(0.001)})


def bad_closure_constant(bad: float) -> List[Member]:
    """learning_rate code whose only constant is bad; the optimizer's last rate is 0.002."""
    return [*model_members({"learning_rate": closure_entry(bad), "lr_schedule": CORRUPT}), optimizer_member(0.002)]


def bad_optimizer_rate(bad: float) -> List[Member]:
    """learning_rate unreadable, and the optimizer's last rate is bad: SB3's default remains."""
    return [*model_members({"learning_rate": CORRUPT, "lr_schedule": CORRUPT}), optimizer_member(bad)]


SOURCES = {bad_plain_learning_rate: 0.001, bad_closure_constant: 0.002, bad_optimizer_rate: DEFAULT_LR}


@pytest.mark.parametrize("bad", BAD_NUMBERS.values(), ids=BAD_NUMBERS.keys())
@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.__name__)
def test_a_bad_number_in_the_file_is_never_used(tmp_path, source, bad):
    model = write_model(tmp_path, source(bad))
    written = model.sanitized()
    assert written["learning_rate"] == written["lr_schedule"] == SOURCES[source]
    schedules = model.inspected()["schedules"]
    assert schedules["lr_schedule"]["value"] == SOURCES[source], schedules


@pytest.mark.parametrize("key", ("clip_range", "clip_range_vf"))
def test_a_bad_clip_range_constant_falls_back_to_the_default(tmp_path, key):
    model = write_model(tmp_path, model_members({key: closure_entry(float("nan"))}))
    assert model.sanitized()[key] == {"clip_range": 0.2, "clip_range_vf": None}[key]


# ---------------------------------------------------------------- 5. the Python that system_info.txt names


@pytest.mark.parametrize("line", ["3.999.1", "banana", "9.11", "3.11", "4.0.0", "3.11.7.8", "3.-1.0", "", "3.11.7 ; rm -rf /"])
def test_a_python_line_that_is_no_python_version_is_recorded_as_unrecognised(line):
    info = system_info.parse(f"- OS: Linux\n- Python: {line}\n")
    assert "python" not in info and info["python_unrecognised"] == line


@pytest.mark.parametrize("line", ["3.11.7", "3.13.0rc1", "2.7.18", "3.8.10+", "3.30.0"])
def test_a_real_python_version_is_kept(line):
    assert system_info.parse(f"- Python: {line}\n")["python"] == line


@pytest.mark.parametrize("line", ["3.999.1", "9.11", "banana"])
def test_a_nonsense_python_line_never_names_the_producer(tmp_path, line):
    model = write_model(tmp_path, model_members({"clip_range": closure_entry(0.2)}, python=line))
    facts = model.inspected()
    assert facts["system_info"]["python_unrecognised"] == line
    assert facts["producer"]["minor"] is None and facts["producer"]["system_info_python"] is None
    assert set(facts["producer"]["code_minors"]) <= {"3.11", "3.12", "3.13"}  # the bytecode's own reading


# ---------------------------------------------------------------- 6. member names and types a clean copy must not hold


UNSAFE = {
    "parent": stored("../../evil", b"x"),
    "absolute": stored("/etc/passwd", b"x"),
    "drive": stored("C:\\x", b"x"),
    "backslash-parent": stored("a\\..\\..\\b", b"x"),
    "nul": stored(b"evil\x00.txt", b"x"),
    "newline": stored("bad\nname", b"x"),
    "escape": stored("esc\x1b[31mred", b"x"),
    "folder": stored("folder/", b""),
    "symlink": stored("link", b"/etc/passwd", mode=stat.S_IFLNK | 0o777),
    "fifo-entry": stored("pipe", b"", mode=stat.S_IFIFO | 0o644),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("member", UNSAFE.values(), ids=UNSAFE.keys())
def test_a_member_with_an_unsafe_name_or_type_is_reported_and_never_copied(tmp_path, member, command):
    model = write_model(tmp_path, [*model_members({"gamma": 0.99, "learning_rate": CORRUPT}), member])
    if command == "sanitize":
        error = model.refused(command)
        assert "member" in error and "\x1b" not in error
    elif command == "inspect":
        members = model.inspected()["members"]
        assert [m["unsafe"] for m in members if m.get("unsafe")], members
    else:
        assert model.run(command).returncode == 1


# ---------------------------------------------------------------- 7. too many members, duplicate members


MANY = {
    "100k-members": lambda: [*model_members({"gamma": 0.99}), *(stored(f"m{i}", b"") for i in range(100_000))],
    "10001-members": lambda: [*model_members({"gamma": 0.99}), *(stored(f"m{i}", b"") for i in range(9_997))],
    "two-data": lambda: [*model_members({"gamma": 0.99}), stored("data", b'{"gamma": 0.5}')],
    "data-and-data-nul": lambda: [*model_members({"gamma": 0.99}), stored(b"data\x00x", b'{"gamma": 0.5}')],
    "two-weights": lambda: [*model_members({"gamma": 0.99}), stored("policy.pth", b"other")],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("members", MANY.values(), ids=MANY.keys())
def test_too_many_or_duplicate_members_are_refused_at_open(tmp_path, members, command):
    model = write_model(tmp_path, members())
    error = model.refused(command)
    assert "members" in error or "twice" in error


def test_a_directory_that_understates_its_entries_is_refused(tmp_path):
    members = [*model_members({"gamma": 0.99}), *(stored(f"m{i}", b"") for i in range(100_000))]
    model = write_model(tmp_path, members, declared_entries=4)
    assert "members" in model.refused("inspect")


def test_ten_thousand_members_are_still_read(tmp_path):
    model = write_model(tmp_path, [*model_members({"gamma": 0.99}), *(stored(f"m{i}", b"") for i in range(9_996))])
    assert len(model.inspected()["members"]) == 10_000


# ---------------------------------------------------------------- 8. what sanitize copies and what it replaces


def test_a_dangerous_entry_outside_the_schedules_is_refused_by_name_on_one_line(tmp_path):
    marker = tmp_path / "PWNED"
    payload = {":type:": "<class 'function'>", ":serialized:": dangerous_payload(f"touch {marker}")}
    model = write_model(tmp_path, model_members({"policy\nkwargs": payload}))
    error = model.refused("sanitize")
    assert "policy\\nkwargs" in error and "dangerous" in error and not marker.exists()


def test_a_dangerous_reason_with_a_newline_stays_on_one_line(tmp_path):
    name = b"system\nforged"
    payload = b"\x80\x04\x8c\x05posix\x8c" + bytes([len(name)]) + name + b"\x93\x8c\x04true\x85R."
    model = write_model(tmp_path, model_members({"policy_kwargs": entry_of(payload)}))
    assert "policy_kwargs" in model.refused("sanitize")


@pytest.mark.parametrize("verdict", ["dangerous", "corrupt"])
def test_a_bad_schedule_entry_is_replaced_never_copied(tmp_path, verdict):
    payload = {"dangerous": {":type:": "<class 'function'>", ":serialized:": dangerous_payload("true")}, "corrupt": CORRUPT}[verdict]
    model = write_model(tmp_path, model_members({"clip_range": payload, "gamma": 0.99}))
    written = model.sanitized()
    assert written["clip_range"] == 0.2
    with zipfile.ZipFile(model.out) as archive:
        assert all(payload[":serialized:"].encode() not in archive.read(name) for name in archive.namelist())


@pytest.mark.parametrize("verdict", ["code", "dangerous", "corrupt", "unknown", "unjudged"])
def test_every_verdict_but_data_blocks_sanitize_outside_the_schedules(verdict):
    entries = [{"key": "policy_kwargs", "verdict": verdict, "reasons": []}, {"key": "learning_rate", "verdict": verdict, "reasons": []}]
    assert [e["key"] for e in sb3_advice.sanitize_blockers({"entries": entries})] == ["policy_kwargs"]
