"""numpy.abi-mismatch: real virtual environments whose installed metadata says NumPy 1.x is needed."""

from __future__ import annotations

from pathlib import Path

from conftest import assert_checks_ran, findings_by_id


def install_metadata(python: Path, name: str, version: str, requires=()) -> None:
    """A distribution as pip leaves it: a .dist-info folder with its METADATA."""
    site = next(python.parent.parent.glob("lib/python3*/site-packages"))
    folder = site / f"{name}-{version}.dist-info"
    folder.mkdir()
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", *(f"Requires-Dist: {r}" for r in requires)]
    (folder / "METADATA").write_text("\n".join(lines) + "\n\nLong description.\n")


def install_torch(python: Path, version: str, cuda: str) -> None:
    install_metadata(python, "torch", version)
    package = next(python.parent.parent.glob("lib/python3*/site-packages")) / "torch"
    package.mkdir()
    (package / "version.py").write_text(f"__version__ = '{version}+cu{cuda.replace('.', '')}'\ncuda = '{cuda}'\nhip = None\n")


def check(envdoctor, python: Path, only: str = "numpy") -> dict:
    run = envdoctor("check", "--python", str(python), "--no-save", "--no-probe", "--only", only, "--json", "-")
    assert run.returncode in (0, 1), run
    assert_checks_ran(run.json(), only)
    return findings_by_id(run.json())


def test_package_that_needs_numpy_1_beside_numpy_2(envdoctor, venvs):
    python = venvs.get("numpy2-old-extension")
    install_metadata(python, "numpy", "2.1.3")
    install_metadata(python, "oldext", "0.9", ["numpy<2,>=1.21", "scipy"])
    install_metadata(python, "newext", "1.4", ["numpy>=1.21"])
    install_metadata(python, "winonly", "1.0", ['numpy<2; sys_platform == "win32"'])
    [finding] = check(envdoctor, python)["numpy.abi-mismatch"]
    assert finding["severity"] == "error"
    assert finding["evidence"]["needs_numpy_1"] == ["oldext 0.9 (numpy<2,>=1.21)"]
    assert [r["command"] for r in finding["remedies"]] == [f"{python} -m pip install 'numpy<2'", f"{python} -m pip install 'oldext>0.9'"]
    [unmet] = check(envdoctor, python, "numpy,requirements")["requirements.unsatisfied"]  # numpy<2 is said once, above
    assert [u["requirement"] for u in unmet["evidence"]["unsatisfied"]] == ["scipy"]


def test_numpy_1_build_without_upper_bound_beside_numpy_2(envdoctor, venvs):
    """scipy 1.11 built for NumPy 1.x, its metadata silent about NumPy 2: only numpy2.csv can tell."""
    python = venvs.get("numpy2-unbounded-scipy")
    install_metadata(python, "numpy", "2.4.1")
    install_metadata(python, "scipy", "1.11.4", ["numpy>=1.21.6"])
    [finding] = check(envdoctor, python)["numpy.abi-mismatch"]
    assert finding["evidence"]["needs_numpy_1"] == ["scipy 1.11.4 (first built for NumPy 2: 1.13.0)"]
    assert [r["command"] for r in finding["remedies"]] == [f"{python} -m pip install 'numpy<2'", f"{python} -m pip install 'scipy>=1.13.0'"]


def test_torch_before_2_3_with_numpy_2(envdoctor, venvs):
    python = venvs.get("numpy2-torch-2-1")
    install_metadata(python, "numpy", "2.0.2")
    install_torch(python, "2.1.2", "12.1")
    [finding] = check(envdoctor, python)["numpy.abi-mismatch"]
    assert finding["evidence"]["needs_numpy_1"][0].startswith("torch 2.1.2 ")
    assert [r["command"] for r in finding["remedies"]] == [
        f"{python} -m pip install 'numpy<2'",
        f"{python} -m pip install torch==2.3.1+cu121 --index-url https://download.pytorch.org/whl/cu121",
    ]


def test_numpy_1_is_fine(envdoctor, venvs):
    python = venvs.get("numpy1-torch-2-1")
    install_metadata(python, "numpy", "1.26.4")
    install_torch(python, "2.1.2", "12.1")
    install_metadata(python, "oldext", "0.9", ["numpy<2"])
    assert "numpy.abi-mismatch" not in check(envdoctor, python)
