"""The fatbin reader against libraries nvcc really built for a chosen arch list, and against fatbins
laid out by hand in a real ELF file (for the shapes nvcc will not make: corrupt and oversized ones)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.collect import fatbin

from conftest import built_once

KERNEL = """
__global__ void {name}(float *x) {{ x[threadIdx.x] += 1.0f; }}
extern "C" void launch_{name}(float *x) {{ {name}<<<1, 32>>>(x); }}
"""
# What nvcc is asked for: cubins for sm_75 and sm_80, PTX only for compute_90.
GENCODE = ("arch=compute_75,code=sm_75", "arch=compute_80,code=sm_80", "arch=compute_90,code=compute_90")
ASKED = ["sm_75", "sm_80", "compute_90"]


def nvcc() -> str:
    found = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if os.path.exists(p)), None)
    if not found:
        pytest.skip("no nvcc on this machine: the libraries nvcc builds cannot be made (the hand-laid fatbins still run)")
    return found


def build_libraries(folder: Path) -> None:
    """A torch-like layout: site/torch/lib/libtorch_cuda.so made of two translation units, each compiled separately."""
    lib = folder / "site" / "torch" / "lib"
    lib.mkdir(parents=True)
    objects = []
    for name in ("add", "scale"):
        source = folder / f"{name}.cu"
        source.write_text(KERNEL.format(name=name))
        flags = [f"-gencode={g}" for g in GENCODE]
        subprocess.run([nvcc(), "-c", "-Xcompiler", "-fPIC", *flags, "-o", str(folder / f"{name}.o"), str(source)], check=True)
        objects.append(str(folder / f"{name}.o"))
    subprocess.run(["g++", "-shared", "-o", str(lib / "libtorch_cuda.so"), *objects], check=True)


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    nvcc()
    return built_once(tmp_path_factory, "nvcc-fatbins", build_libraries)


@pytest.mark.slow
def test_the_arch_list_read_is_the_one_nvcc_was_asked_for(built):
    kernels = fatbin.torch_kernels(str(built / "site"))
    assert kernels["arch_list"] == ASKED
    assert kernels["fatbins"] == 2 and kernels["counts"] == {"compute_90": 2, "sm_75": 2, "sm_80": 2}
    assert kernels["files"] == [str(built / "site" / "torch" / "lib" / "libtorch_cuda.so")]


@pytest.mark.slow
def test_reading_the_kernels_imports_nothing_of_the_library(built):
    code = (
        "import sys; from envdoctor.collect import fatbin; "
        f"print(fatbin.torch_kernels({str(built / 'site')!r})['arch_list']); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == [str(ASKED), "[]"]


def test_a_torch_without_cuda_libraries_has_no_kernel_facts(tmp_path):
    (tmp_path / "torch" / "lib").mkdir(parents=True)
    (tmp_path / "torch" / "lib" / "libtorch_cpu.so").write_bytes(b"\x7fELF")
    assert fatbin.torch_kernels(str(tmp_path)) is None
    assert fatbin.torch_kernels(None) is None


# Fatbins laid out by hand after the layout in the module docstring, placed in a real ELF section.

def entry(kind: int, capability: int, payload: bytes = b"\0" * 16, header_size: int = 64) -> bytes:
    header = struct.pack("<HHIQ12xI", kind, 0x101, header_size, len(payload), capability)
    return header + b"\0" * (header_size - len(header)) + payload


def blob(*entries: bytes, size=None) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", fatbin.FATBIN_MAGIC, 1, 16, len(body) if size is None else size) + body


def elf_with(tmp_path: Path, data: bytes) -> str:
    """A real shared object (gcc) with `data` as its .nv_fatbin section (objcopy)."""
    source, plain, section, result = (tmp_path / n for n in ("x.c", "plain.so", "fatbin.bin", "libx.so"))
    source.write_text("int x(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(plain), str(source)], check=True)
    section.write_bytes(data)
    subprocess.run(["objcopy", "--add-section", f".nv_fatbin={section}", str(plain), str(result)], check=True)
    return str(result)


def test_hand_laid_fatbins_read_as_their_headers_say(tmp_path):
    units = [blob(entry(2, 75), entry(2, 86), entry(1, 120))] * 3 + [blob(entry(2, 90))]  # one unit with an extra arch
    kernels = fatbin.library_kernels([elf_with(tmp_path, b"".join(units))])
    assert kernels["arch_list"] == ["sm_75", "sm_86", "compute_120"]
    assert kernels["counts"] == {"compute_120": 3, "sm_75": 3, "sm_86": 3, "sm_90": 1}


@pytest.mark.parametrize("data, why", [
    (blob(entry(2, 80), size=1 << 40), "fatbin header outside its section"),
    (blob(entry(2, 80, payload=b"\0" * 8)[:-8] + b"\0" * 8 + struct.pack("<HHIQ12xI", 2, 1, 64, 1 << 40, 80)), "fatbin entry outside its fatbin"),
    (blob(entry(2, 80, header_size=8)), "fatbin entry outside its fatbin"),
])
def test_a_corrupt_fatbin_is_an_error_not_a_guess(tmp_path, data, why):
    kernels = fatbin.library_kernels([elf_with(tmp_path, data)])
    assert "arch_list" not in kernels and why in kernels["error"]


def test_the_walk_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(fatbin, "MAX_FATBINS", 2)
    kernels = fatbin.library_kernels([elf_with(tmp_path, blob(entry(2, 80)) * 3)])
    assert kernels["error"] == "OverflowError: more than 2 fatbins"


def test_a_file_that_is_not_elf_is_an_error(tmp_path):
    path = tmp_path / "libtorch_cuda.so"
    path.write_bytes(b"not an ELF file, just text " * 4)
    assert fatbin.library_kernels([str(path)])["error"] == "NotElf: no ELF header"


@pytest.mark.slow
def test_the_target_collector_reads_the_installed_cuda_torch(built):
    from envdoctor.collect.target import installed_torch_kernels

    torch = {"name": "torch", "version": "2.13.0", "location": str(built / "site")}
    facts = {"torch_build": {"version": "2.13.0+cu130", "cuda": "13.0"}, "distributions": [torch]}
    assert installed_torch_kernels(facts)["arch_list"] == ASKED
    assert installed_torch_kernels({**facts, "torch_build": {"version": "2.13.0+cpu", "cuda": None}}) is None
