"""Which NumPy an installed package was built against, read from its binaries: a real wheel built for
NumPy 1.x (Bottleneck 1.3.7) and an extension compiled here against the venv's NumPy 2 headers."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import built_once, findings_by_id
from helpers.local_wheels import packed_wheel
from envdoctor.collect.numpy_builds import built_against, numpy_builds

EXTENSION = """
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>
static struct PyModuleDef definition = {PyModuleDef_HEAD_INIT, "numexpr_like", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_numexpr_like(void) { import_array(); return PyModule_Create(&definition); }
"""
VENV = "numpy-builds"


def compiled_wheel(folder: Path, python: Path) -> Path:
    """numexpr 2.8.0 by name (numpy2.csv: first built for NumPy 2 is 2.10.0), but compiled here against NumPy 2."""
    paths = subprocess.run(
        [str(python), "-c", "import numpy, sysconfig, importlib.machinery as m; print(numpy.get_include()); print(sysconfig.get_paths()['include']); print(m.EXTENSION_SUFFIXES[0])"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    numpy_include, python_include, suffix = paths
    (folder / "ext.c").write_text(EXTENSION)
    binary = folder / f"numexpr_like{suffix}"
    subprocess.run(["gcc", "-shared", "-fPIC", f"-I{numpy_include}", f"-I{python_include}", "-o", str(binary), str(folder / "ext.c")], check=True)
    dist_info = "numexpr-2.8.0.dist-info"
    files = {
        f"numexpr/{binary.name}": binary.read_bytes(),
        f"{dist_info}/METADATA": b"Metadata-Version: 2.1\nName: numexpr\nVersion: 2.8.0\nRequires-Dist: numpy>=1.13.3\n",
        f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: envdoctor-tests\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n",
    }
    return packed_wheel(folder / "numexpr-2.8.0-cp311-cp311-linux_x86_64.whl", dist_info, files)


@pytest.fixture(scope="session")
def built_venv(venvs, old_wheel, tmp_path_factory) -> Path:
    python = venvs.get(VENV, ["numpy==2.4.6"])
    wheels = built_once(tmp_path_factory, "numpy-2-extension", lambda folder: compiled_wheel(folder, python))
    venvs.install(VENV, "--no-deps", str(old_wheel), str(next(wheels.glob("*.whl"))))
    return python


def site_of(python: Path) -> Path:
    return next(python.parent.parent.glob("lib/python3*/site-packages"))


@pytest.mark.slow
def test_the_binaries_tell_which_numpy_each_package_was_built_against(built_venv):
    site = site_of(built_venv)
    dists = [
        {"name": "Bottleneck", "version": "1.3.7", "location": str(site), "metadata": "Bottleneck-1.3.7.dist-info", "requires": ["numpy"]},
        {"name": "numexpr", "version": "2.8.0", "location": str(site), "metadata": "numexpr-2.8.0.dist-info", "requires": ["numpy>=1.13.3"]},
        {"name": "unrelated", "version": "1.0", "location": str(site), "metadata": "unrelated-1.0.dist-info", "requires": []},
    ]
    builds = numpy_builds(dists)
    assert builds["numexpr"] == {"numpy": "2", "extension": f"numexpr/numexpr_like{built_venv_suffix(built_venv)}"}
    assert builds["Bottleneck"]["numpy"] == "1" and builds["Bottleneck"]["extension"].startswith("bottleneck/")
    assert "unrelated" not in builds
    extension = site / builds["Bottleneck"]["extension"]
    assert built_against(str(extension))[1] < extension.stat().st_size  # its code is not read, only its read-only data


def built_venv_suffix(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import importlib.machinery as m; print(m.EXTENSION_SUFFIXES[0])"], capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.slow
def test_check_trusts_the_binaries_over_the_table(built_venv, envdoctor):
    run = envdoctor("check", "--python", str(built_venv), "--no-save", "--no-probe", "--only", "numpy", "--json", "-")
    assert run.returncode == 1, run
    [finding] = findings_by_id(run.json())["numpy.abi-mismatch"]
    [line] = finding["evidence"]["needs_numpy_1"]  # numexpr 2.8.0 is older than the table's 2.10.0, but was built for NumPy 2
    assert line.startswith("Bottleneck 1.3.7 (built against NumPy 1.x: bottleneck/") and "first built for NumPy 2: 1.4.0" in line
    assert run.json()["facts"]["target"]["numpy_builds"]["numexpr"]["numpy"] == "2"


def test_a_name_split_across_two_reads_is_still_found(tmp_path, monkeypatch):
    from envdoctor.collect import numpy_builds as module

    monkeypatch.setattr(module, "CHUNK", 16)
    old = tmp_path / "old.so"
    old.write_bytes(b"\0" * 13 + b"numpy.core._multiarray_umath" + b"\0" * 40)
    new = tmp_path / "new.so"
    new.write_bytes(b"\0" * 7 + b"numpy._core._multiarray_umath\0numpy.core._multiarray_umath")
    plain = tmp_path / "plain.so"
    plain.write_bytes(b"\0" * 30 + b"mylib.core._multiarray_umath" + b"\0" * 30)  # the common tail alone is not NumPy
    assert [built_against(str(p))[0] for p in (old, new, plain)] == ["1", "2", None]


def test_a_record_that_points_outside_its_folder_is_not_followed(tmp_path):
    (tmp_path / "site" / "evil-1.0.dist-info").mkdir(parents=True)
    (tmp_path / "outside.so").write_bytes(b"numpy.core._multiarray_umath")
    (tmp_path / "site" / "evil-1.0.dist-info" / "RECORD").write_text("../outside.so,,\n")
    dist = {"name": "evil", "location": str(tmp_path / "site"), "metadata": "evil-1.0.dist-info", "requires": ["numpy"]}
    assert numpy_builds([dist]) == {}
