"""The knowledge tables: their queries, and a sample of their rows cross-checked against the sourced
notes in docs/knowledge (domain-facts.md, torch-pypi-requires.txt, arch-sources.md, driver-table-sources.md)."""

from __future__ import annotations

import ast
import re

import pytest

from envdoctor.knowledge import arches, drivers, minor_of, rows, torch_matrix, wheels
from conftest import REPO

NOTES = REPO / "docs" / "knowledge"
DATA_FILES = ("drivers.csv", "torch_matrix.csv", "arches.csv", "nvidia_wheels.csv")


def shared_text(name: str) -> str:
    return (NOTES / name).read_text(encoding="utf-8")


def table_row(text: str, first_cell: str) -> str:
    """The markdown table line whose first cell starts with `first_cell`."""
    for line in text.splitlines():
        if line.startswith(f"| {first_cell}"):
            return line
    raise AssertionError(f"no table row for {first_cell!r} in domain-facts.md")


@pytest.mark.parametrize("filename", DATA_FILES)
def test_every_row_cites_a_source(filename):
    loaded = rows(filename)
    assert loaded, filename
    assert all(row["source"].strip() for row in loaded)


@pytest.mark.parametrize("cuda", sorted(drivers.table()))
def test_toolkit_drivers_match_the_release_notes_table(cuda):
    line = table_row(shared_text("domain-facts.md"), f"{cuda}.")
    row = drivers.requirement(cuda)
    assert row.toolkit_linux in line
    if row.toolkit_windows:
        assert row.toolkit_windows in line


def test_minor_compatibility_floors_match_nvidia():
    text = shared_text("domain-facts.md")
    assert "12.x: Linux ≥ 525.60.13" in text and drivers.requirement("12.4").minor_compat_linux == "525.60.13"
    assert "11.x: Linux ≥ 450.80.02*, Windows ≥ 452.39*" in text
    assert drivers.requirement("11.8").minor_compat("windows") == "452.39"
    assert drivers.requirement("10.2").minor_compat_linux is None
    assert "| CUDA 13.x | ≥ 580 |" in text
    assert {drivers.requirement(c).minor_compat("windows") for c in ("13.0", "13.1", "13.2", "13.3")} == {"580"}


def test_minimum_driver_is_the_family_floor_where_minor_compatibility_applies():
    assert drivers.minimum_driver("12.1") == "525.60.13"
    assert drivers.minimum_driver("11.0") == "450.51.05"  # CUDA 11.0's own driver predates the 11.x floor
    assert drivers.minimum_driver("10.2") == "440.33"
    assert drivers.minimum_driver("13.0", os="windows") == "580"  # NVIDIA Table 1: CUDA 13.x >= 580, no full Windows number
    assert not drivers.driver_satisfies("560.94", "13.0", os="windows") and drivers.driver_satisfies("581.57", "13.2", os="windows")
    assert not drivers.driver_satisfies("470.82.01", "12.1")
    assert drivers.driver_satisfies("580.65.06", "13.0")
    assert drivers.driver_satisfies("535.104.05", "12.8")
    assert drivers.requirement("7.5") is None


def minors_in(cell: str) -> set:
    """ "3.8–3.11 (+3.12)" or "3.9–3.12 (3.13 exp.)" -> the CPython minors with release wheels (free-threaded "t" builds aside)."""
    low, high = re.match(r"3\.(\d+)–3\.(\d+)", cell).groups()
    extra = re.findall(r"\(\+?3\.(\d+)(?: exp\.)?\)", cell)
    return {f"3.{n}" for n in [*range(int(low), int(high) + 1), *map(int, extra)]}


@pytest.mark.parametrize("release", torch_matrix.releases(), ids=lambda r: r.torch)
def test_every_release_row_matches_the_release_matrix(release):
    torch, vision, audio, python, variants, default = (
        cell.strip() for cell in table_row(shared_text("domain-facts.md"), f"{minor_of(release.torch)} |").split("|")[1:7]
    )
    assert vision.split()[0] == minor_of(release.torchvision)
    if release.torchaudio:
        assert audio.split()[0] == minor_of(release.torchaudio)
    else:
        assert audio.startswith("none")
    assert set(release.python) == minors_in(python)
    assert [torch_matrix.variant_tag(c) for c in release.cuda] == re.findall(r"cu\d+", variants)
    assert torch_matrix.variant_tag(release.pypi_default_cuda) == re.search(r"cu\d+", default).group()


@pytest.mark.parametrize("torch", ["1.13.1", "2.0.1", "2.1.2", "2.4.1", "2.6.0", "2.7.1", "2.8.0", "2.9.1", "2.10.0", "2.11.0", "2.12.1", "2.14.1"])
def test_pypi_default_family_matches_the_recorded_wheel_metadata(torch):
    text = shared_text("torch-pypi-requires.txt")
    block = text.split(f"## torch {torch} ", 1)[1].split("## ", 1)[0]
    pinned = {wheels.cuda_family(name) for name in re.findall(r"^\s+([A-Za-z0-9_.-]+)", block, re.M)} - {None}
    assert pinned == {wheels.torch_family(torch_matrix.find(torch).pypi_default_cuda)}


def test_arch_lists_match_torch_release_code_cc():
    text = shared_text("domain-facts.md")
    assert "12.6 → {50,60,70,75,80,86,90}" in text
    assert arches.supported_capabilities("cu126") == ("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0")
    assert "2.13 PyPI cu130 binary: sm_75,80,86,90,100,120" in text
    assert arches.supported_capabilities("cu130", "2.13.0") == ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0")


def test_arch_support_follows_the_cubin_rule():
    assert arches.support("8.9", "cu126") == arches.SASS  # Ada runs sm_86 cubins
    assert arches.support("12.0", "cu126") is None  # Blackwell on cu126
    assert arches.support("6.1", "cu130") is None  # Pascal on cu130
    assert arches.support("3.7", "cu118", "2.7.1") == arches.SASS
    assert arches.supported_capabilities("cu128", "2.7.1")[0] == "7.5"
    assert arches.supported_capabilities("cu128", "2.8.0")[0] == "7.0"
    assert arches.variants_supporting("12.0") == ("cu128", "cu129", "cu130", "cu132")
    assert arches.variants_supporting("6.1", "2.13.0") == ("cu126",)


def test_install_args_use_the_form_of_each_era():
    old = torch_matrix.find("1.13.1")
    assert torch_matrix.install_args(old, "11.6", ["torch", "torchvision", "torchaudio"]) == [
        "torch==1.13.1+cu116", "torchvision==0.14.1+cu116", "torchaudio==0.13.1+cu116",
        "--extra-index-url", "https://download.pytorch.org/whl/cu116",
    ]
    assert torch_matrix.install_args(torch_matrix.find("2.13"), "12.6", ["torch", "torchvision", "torchaudio"]) == [
        "torch==2.13.0+cu126", "torchvision==0.28.0+cu126", "--index-url", "https://download.pytorch.org/whl/cu126",
    ]
    assert torch_matrix.install_args(torch_matrix.find("2.5.1+cu124"), "cpu", ["torch"]) == [
        "torch==2.5.1+cpu", "--index-url", "https://download.pytorch.org/whl/cpu",
    ]
    with pytest.raises(ValueError):
        torch_matrix.install_args(torch_matrix.find("2.13"), "11.8", ["torch"])


def test_releases_are_oldest_first_and_found_by_minor():
    versions = [r.torch for r in torch_matrix.releases()]
    assert versions[0] == "1.12.1" and versions[-1] == "2.14.1" and "2.10.0" in versions[-5:]
    assert torch_matrix.find("2.3").torch == "2.3.1"
    assert torch_matrix.find("3.0") is None
    assert torch_matrix.variant_tag("13.0") == "cu130" and torch_matrix.index_url("11.6").endswith("/cu116")


@pytest.mark.parametrize(
    "name, family",
    [
        ("nvidia-cublas-cu12", "cu12"), ("nvidia_cudnn_cu11", "cu11"), ("nvidia-cublas", "cu13"),
        ("nvidia-cudnn-cu13", "cu13"), ("cuda-toolkit", "cu13"), ("nvidia-cuda-runtime-cu117", "cu11"),
        ("nvidia-ml-py", None), ("torch", None), ("nvidia-cudnn", None),
    ],
)
def test_cuda_family(name, family):
    assert wheels.cuda_family(name) == family


def test_cuda_toolkit_meta_package_by_version_and_libraries():
    assert wheels.cuda_family("cuda-toolkit", "12.9.1") == "cu12"
    assert wheels.torch_family("11.8") == "cu11" and wheels.torch_family(None) is None
    assert wheels.libraries_of("nvidia-cublas-cu12") == ("libcublas", "libcublasLt")


def test_soname_major_of_wheel_libraries():
    assert wheels.soname_major("nvidia-cufft-cu12", "11.3.3.83") == 11
    assert wheels.soname_major("nvidia-cusparse", "12.6.3.3") == 12
    assert wheels.soname_major("nvidia-cufile-cu12", "1.13.1.3") == 0
    assert wheels.soname_major("nvidia-ml-py", "12.0") is None


OBSERVED_ARCH_LIST = re.compile(r"^- `(\d+\.\d+\.\d+)\+(cu\d+)` → `(\[[^`]*\])`", re.M)
NVIDIA_GA_ROW = re.compile(r"^\| CUDA (\d+\.\d+)(?:\.\d+)? GA \| >= ?([\d.]+) \| >= ?([\d.]+) \|", re.M)


def observed_arch_lists() -> list:
    """(torch, variant, get_arch_list()) as torch printed them, quoted in arch-sources.md."""
    found = [(torch, variant, ast.literal_eval(flags)) for torch, variant, flags in OBSERVED_ARCH_LIST.findall(shared_text("arch-sources.md"))]
    assert len(found) >= 5
    return found


def nvidia_ga_rows() -> list:
    found = NVIDIA_GA_ROW.findall(shared_text("driver-table-sources.md"))
    assert len(found) >= 18
    return found


@pytest.mark.parametrize("torch, variant, flags", observed_arch_lists(), ids=lambda v: v if isinstance(v, str) else None)
def test_arch_rows_match_what_torch_reported(torch, variant, flags):
    row = arches.arch_list(variant, torch)
    assert row is not None, f"arches.csv has no {variant} row for torch {torch}"
    assert row.flags() == arches.from_arch_flags(flags, variant, torch, "observed").flags()


@pytest.mark.parametrize("cuda, linux, windows", nvidia_ga_rows())
def test_toolkit_drivers_are_nvidias_own_numbers(cuda, linux, windows):
    row = drivers.requirement(cuda)
    assert (row.toolkit_linux, row.toolkit_windows) == (linux, windows)


def test_the_audited_rows():
    assert arches.support("7.0", "cu128", "2.11.0") is None  # V100 on 2.11+cu128: "no kernel image is available"
    assert arches.support("7.0", "cu128", "2.10.0") == arches.SASS
    assert arches.arch_list("cu128", "2.7.1").ptx == ("12.0",) and arches.support("13.0", "cu128", "2.7.1") == arches.PTX
    assert drivers.requirement("11.8").toolkit("windows") == "520.06"
    assert "installer" in drivers.requirement("11.8").source and "522.06" in drivers.requirement("11.8").source


def test_ptx_rows_follow_what_the_wheels_hold():
    assert arches.arch_list("cu130", "2.11.0").ptx == () and arches.arch_list("cu130", "2.10.0").ptx == ("12.0",)
    assert arches.support("12.0", "cu124", "2.5.1") is None  # RTX 5090 on the 2.5.1 PyPI wheel: no kernel image
    assert arches.support("12.1", "cu130", "2.13.0") == arches.SASS  # sm_121 runs the sm_120 cubins


# torch 2.13 DEVICE_REQUIREMENT, code SM -> device SMs (arch-sources.md "Platforms and Tegra")
@pytest.mark.parametrize("cubin, device, runs", [
    ("8.0", "8.6", True), ("8.0", "8.9", True), ("8.6", "8.0", False), ("8.0", "8.7", False), ("8.6", "8.7", False),
    ("8.7", "8.7", True), ("8.7", "8.9", False), ("7.0", "7.2", False), ("7.2", "7.5", False), ("5.0", "5.3", False),
    ("10.0", "10.1", False), ("10.0", "10.3", True), ("10.1", "11.0", True), ("11.0", "11.0", True), ("12.0", "12.1", True),
    ("9.0", "10.0", False),
])
def test_cubins_run_as_torchs_device_requirement_says(cubin, device, runs):
    assert arches.cubin_runs(cubin, device) is runs


def test_aarch64_has_its_own_arch_lists():
    assert arches.supported_capabilities("cu130", "2.13.0", arches.AARCH64) == ("8.0", "9.0", "10.0", "11.0", "12.0")
    assert arches.variants_supporting("11.0", "2.13.0", arches.AARCH64) == ("cu130", "cu132")
    assert arches.variants_supporting("11.0", "2.13.0") == ()
    assert arches.platform_of("arm64") == arches.AARCH64 and arches.platform_of("AMD64") == arches.X86_64


@pytest.mark.parametrize(
    "flags, sass, ptx",
    [
        (["sm_75", "sm_120", "compute_120"], ("7.5", "12.0"), ("12.0",)),
        (["sm_90a", "sm_100f", "sm_90", "sm_121"], ("9.0", "10.0", "12.1"), ()),
        (["gfx90a", "", "sm_", "compute_x", "sm_75; rm -rf /", 75, None], (), ()),
        ([], (), ()),
    ],
)
def test_arch_flags_as_torch_prints_them(flags, sass, ptx):
    recorded = arches.from_arch_flags(flags, "cu128", "2.11.0+cu128", "probe")
    assert (recorded.sass, recorded.ptx) == (sass, ptx)
    assert recorded.covers("2.11.0") and not recorded.covers("2.10.0")


def test_the_gcc_that_first_defines_each_glibcxx_version():
    from envdoctor.knowledge.conda import gcc_providing

    assert [gcc_providing(v) for v in ("3.4.28", "3.4.30", "3.4.32", "3.4.33", "3.4.34", "3.4.35")] == ["9.3", "12.1", "13.2", "14.1", "15.1", None]
