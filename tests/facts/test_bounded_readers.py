"""Every reader of outside data reads regular files only, and within its bounds.

Each reader is handed a FIFO (an open for reading would wait for a writer forever), a device node
(it never ends), a symlink loop and a 1 GB sparse file, as a report, a fix record, a policy, a host
file under ENVDOCTOR_ROOT, a shared object, a conda-meta record and a distribution's METADATA. Each
must answer (a value, or its one-line error) within seconds; the ELF reader also gets a small object
whose version-need chains would have it read for minutes.
"""

from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import Callable

import pytest

from envdoctor import host
from envdoctor.collect import elf
from envdoctor.engine import read_report
from envdoctor.errors import EnvdoctorError
from envdoctor.fix import record
from envdoctor.policy.load import load as load_policy
from envdoctor.target import conda as target_conda
from envdoctor.target import facts as target_facts

from conftest import special_file

QUICK_S = 5.0


def plant(folder: Path, name: str, kind: str) -> Path:
    """A hostile file of `kind` at folder/name."""
    return special_file(folder / name, kind)


KINDS = ("fifo", "device", "symlink-loop", "sparse-1gb")


def quickly(call: Callable[[], object]) -> object:
    started = time.monotonic()
    try:
        return call()
    finally:
        assert time.monotonic() - started < QUICK_S


def refused_in_one_line(call: Callable[[], object]) -> str:
    with pytest.raises(EnvdoctorError) as raised:
        quickly(call)
    message = str(raised.value)
    assert "\n" not in message and message
    return message


@pytest.mark.parametrize("kind", KINDS)
def test_a_report_a_record_and_a_policy_are_refused_in_one_line(tmp_path, kind):
    path = plant(tmp_path, "hostile.json", kind)
    refused_in_one_line(lambda: read_report(path))
    refused_in_one_line(lambda: record.load(path))
    refused_in_one_line(lambda: load_policy(path))


@pytest.mark.parametrize("kind", KINDS)
def test_a_host_file_is_no_fact_or_a_bounded_one(tmp_path, monkeypatch, kind):
    (tmp_path / "proc").mkdir()
    plant(tmp_path / "proc", "cpuinfo", kind)
    monkeypatch.setenv(host.ROOT_VARIABLE, str(tmp_path))
    text = quickly(lambda: host.read_text("/proc/cpuinfo"))
    assert text is None if kind != "sparse-1gb" else len(text) == host.HOST_FILE_LIMIT


@pytest.mark.parametrize("kind", KINDS)
def test_a_shared_object_is_not_read_and_the_walk_goes_on(tmp_path, kind):
    site = tmp_path / "site-packages"
    site.mkdir()
    path = plant(site, "libhostile.so", kind)
    assert quickly(lambda: elf.read_versions(str(path))) is None
    found = quickly(lambda: elf.runtime_requirements([str(site)], str(tmp_path)))
    assert found["requirements"] == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_conda_meta_record_is_unread_with_its_reason(tmp_path, kind):
    meta = tmp_path / "conda-meta"
    meta.mkdir()
    plant(meta, "hostile-1.0-0.json", kind)
    found = quickly(lambda: target_conda.read_records(str(tmp_path)))
    assert found["records"] == [] and [u["file"] for u in found["unread"]] == ["hostile-1.0-0.json"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_metadata_file_is_refused_or_read_to_its_bound(tmp_path, kind):
    path = plant(tmp_path, "METADATA", kind)
    if kind == "sparse-1gb":
        assert quickly(lambda: target_facts.read_headers(str(path)))["requires"] == []
    else:
        with pytest.raises(OSError):
            quickly(lambda: target_facts.read_headers(str(path)))


def long_chained_object(entries: int = 32768) -> bytes:
    """A 1 MiB ELF64 object whose `entries` version-need entries each claim 65535 names, all pointing
    into one chain of `entries` names: quadratic for a reader that walks each claim."""
    strings = b"\0libstdc++.so.6\0GLIBCXX_3.4\0"
    library, version = 1, strings.index(b"GLIBCXX_3.4")
    needs = b"".join(struct.pack("<HHIII", 1, 65535, library, 16 * (entries - at), 16) for at in range(entries))
    names = b"".join(struct.pack("<IHHII", 0, 0, 0, version, 16 if at < entries - 1 else 0) for at in range(entries))
    data = needs + names
    header_size, data_at = 64, 64
    strings_at = data_at + len(data)
    sections_at = strings_at + len(strings)
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, sections_at, 0, header_size, 0, 0, 64, 3, 0)
    section = lambda kind, at, size, link: struct.pack("<IIQQQQIIQQ", 0, kind, 0, 0, at, size, link, 0, 1, 0)
    table = section(0, 0, 0, 0) + section(elf.SHT_GNU_VERNEED, data_at, len(data), 2) + section(3, strings_at, len(strings), 0)
    return header + data + strings + table


def test_a_long_version_need_chain_is_read_in_bounded_time_and_named_in_one_line(tmp_path):
    site = tmp_path / "site-packages"
    site.mkdir()
    (site / "libchained.so").write_bytes(long_chained_object())
    started = time.monotonic()
    assert elf.read_versions(str(site / "libchained.so")) is None
    found = elf.runtime_requirements([str(site)], str(tmp_path))
    assert time.monotonic() - started < QUICK_S
    assert found["truncated"] == f"not read, beyond this reader's bounds: site-packages/libchained.so: more than {elf.MAX_ENTRIES} version and dynamic entries"


def test_a_policy_nested_past_any_parser_is_one_usage_line(envdoctor, tmp_path):
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 100000 + "]" * 100000 + "\n")
    result = envdoctor("check", "--policy", str(deep), "--no-save", "--no-probe", child=True)
    assert result.returncode == 2, result
    assert result.stderr == f"envdoctor: error: {deep}: nested deeper than any policy\n"
