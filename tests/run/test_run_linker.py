"""The library named, not only the class of the error: for a missing symbol version or an undefined
symbol, `run` resolves which file the dynamic linker loaded, through which variable or path, and which
file defines what it lacked (collect/linker.py). Real shared objects built with gcc, loaded by a real
program through a wrapper script that puts an old copy first on LD_LIBRARY_PATH."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_envdoctor
from envdoctor.collect import linker

OLD = "int solve(int x) { return x; }\n"
NEW = "int solve(int x) { return x; }\nint solve_batch(int x) { return 2 * x; }\n"
OLD_MAP = "DEP_1.0 { global: solve; local: *; };\n"
NEW_MAP = "DEP_1.0 { global: solve; local: *; };\nDEP_2.0 { global: solve_batch; } DEP_1.0;\n"
EXTENSION = "extern int solve_batch(int); int run(void) { return solve_batch(1); }\n"


def gcc(*args: str) -> None:
    subprocess.run(["gcc", "-shared", "-fPIC", "-w", *args], check=True, timeout=60)


@pytest.fixture(scope="module")
def libraries(tmp_path_factory) -> Path:
    """old/libdep.so.1 (DEP_1.0), new/libdep.so.1 (DEP_1.0 and DEP_2.0), and ext/libext.so that needs
    DEP_2.0 and finds new/ through its RUNPATH."""
    root = tmp_path_factory.mktemp("linker")
    for name, source, version_map in (("old", OLD, OLD_MAP), ("new", NEW, NEW_MAP)):
        (root / name).mkdir()
        (root / name / "dep.c").write_text(source)
        (root / name / "dep.map").write_text(version_map)
        gcc(f"-Wl,--version-script={root / name / 'dep.map'}", "-Wl,-soname,libdep.so.1", str(root / name / "dep.c"), "-o", str(root / name / "libdep.so.1"))
    (root / "ext").mkdir()
    (root / "ext" / "ext.c").write_text(EXTENSION)
    gcc(str(root / "ext" / "ext.c"), "-o", str(root / "ext" / "libext.so"), f"-L{root / 'new'}", "-l:libdep.so.1", f"-Wl,-rpath,{root / 'new'}", "-Wl,--enable-new-dtags")
    return root


def test_the_library_loaded_in_place_of_the_one_that_defines_the_version_is_named_with_its_variable(libraries, tmp_path):
    wrapper = tmp_path / "train.sh"
    wrapper.write_text(f"export LD_LIBRARY_PATH={libraries / 'old'}\nexec {sys.executable} -c \"import ctypes; ctypes.CDLL('{libraries / 'ext' / 'libext.so'}')\"\n")
    run = run_envdoctor("run", "--report-dir", str(tmp_path / "reports"), "--", "bash", str(wrapper), cwd=tmp_path, unset=("LD_LIBRARY_PATH", "LD_PRELOAD"), child=True, timeout=120)
    assert run.returncode == 1, run
    report = json.loads(next((tmp_path / "reports").glob("crash-*.json")).read_text())
    loader = report["run"]["loader"]
    assert loader["library"] == "libdep.so.1" and loader["version"] == "DEP_2.0"
    assert loader["loaded"] == str(libraries / "old" / "libdep.so.1") and loader["via"] == f"LD_LIBRARY_PATH={libraries / 'old'}"
    assert loader["loaded_defines_version"] is False and loader["defined_by"] == [str(libraries / "new" / "libdep.so.1")]
    cause = report["diagnosis"][0]
    assert (cause["id"], cause["confidence"]) == ("run.exception", "confirmed")
    assert any(line.startswith(f"the loader took libdep.so.1 (which {libraries / 'ext' / 'libext.so'} needs) from {libraries / 'old' / 'libdep.so.1'}") for line in cause["evidence"])
    assert cause["remedy"]["command"] == "unset LD_LIBRARY_PATH"


def test_without_the_variable_the_runpath_decides_and_defines_the_version(libraries):
    found = linker.resolve("libdep.so.1", str(libraries / "ext" / "libext.so"), {})
    assert found == (str(libraries / "new" / "libdep.so.1"), "the DT_RUNPATH of libext.so")
    assert linker.resolve("libdep.so.1", str(libraries / "ext" / "libext.so"), {"LD_PRELOAD": str(libraries / "old" / "libdep.so.1")})[1].startswith("LD_PRELOAD=")


def test_an_undefined_symbol_names_each_library_its_object_links_and_where_it_came_from(libraries):
    text = f"OSError: {libraries / 'ext' / 'libext.so'}: undefined symbol: solve_batch"
    found = linker.loader_failure(text, {"LD_LIBRARY_PATH": str(libraries / "old")}, "")
    assert found["symbol"] == "solve_batch" and found["needed_by"] == str(libraries / "ext" / "libext.so")
    [dep] = [n for n in found["needed"] if n["library"] == "libdep.so.1"]
    assert dep == {"library": "libdep.so.1", "loaded": str(libraries / "old" / "libdep.so.1"), "via": f"LD_LIBRARY_PATH={libraries / 'old'}"}
