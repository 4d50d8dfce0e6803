"""Distribution metadata read as importlib.metadata reads it, requirements judged for the target as
`pip check` judges them (requirements.unsatisfied), and the leaves a new-environment plan keeps."""

from __future__ import annotations

import email
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Iterable, Optional

import pytest

from conftest import REPO, assert_checks_ran, changed_report, findings_by_id, judge_recorded, pip
from helpers.local_wheels import packed_wheel
from envdoctor.checks.numpy import abi_mismatch, too_old_numpy
from envdoctor.checks.requirements import unsatisfied
from envdoctor.fix.installer import Installer
from envdoctor.fix.mixed_wheels import plan_mixed_wheels
from envdoctor.fix.requires import leaves
from envdoctor.target import SCRIPTS
from envdoctor.target.facts import CHUNK, HEADER_LIMIT, header_block, parsed_headers, read_distribution

# scipy 1.11.4's License header as its wheel carries it: folded, with whitespace-only continuation lines.
SCIPY_LICENSE = "Copyright (c) 2001-2002 Enthought, Inc. 2003-2023, SciPy Developers.\n        All rights reserved.\n        \n        Redistribution and use in source and binary forms\n \n\t\n        ----\n"
SCIPY_REQUIRES = ("numpy<1.28.0,>=1.21.6", 'pytest; extra == "test"', 'mpmath; extra == "test"')


def metadata_text(name: str, version: str, requires: Iterable[str] = (), extras: Iterable[str] = (), license: str = "", newline: str = "\n", body: str = "Long description.\n\nMore.\n") -> str:
    """METADATA as a build backend writes it; `license` is the folded value after `License: `."""
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if license:
        lines.append("License: " + license.rstrip("\n"))
    lines += [f"Provides-Extra: {e}" for e in extras] + [f"Requires-Dist: {r}" for r in requires]
    return newline.join("\n".join(lines).split("\n")) + newline + newline + body


def site_packages(python: Path) -> Path:
    return next(python.parent.parent.glob("lib/python3*/site-packages"))


def write_dist_info(site: Path, name: str, version: str, requires: Iterable[str] = (), license: str = "", extras: Iterable[str] = ()) -> Path:
    """A distribution as an installer leaves it: a .dist-info folder with its METADATA."""
    folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(metadata_text(name, version, requires, extras, license))
    return folder


# --- the reader against importlib.metadata, on generated metadata -----------------------------------


def header_variants():
    """(id, METADATA text): continuation lines of every whitespace, line endings, header orders."""
    for label, blank in (("space", " "), ("tab", "\t"), ("spaces-tab", "  \t "), ("many", " \n \n\t")):
        yield f"license-{label}", metadata_text("scipy", "1.11.4", SCIPY_REQUIRES, ("test",), f"Copyright\n{blank}\n        All rights reserved.")
    for label, newline in (("crlf", "\r\n"), ("cr", "\r")):
        yield f"license-{label}", metadata_text("scipy", "1.11.4", SCIPY_REQUIRES, ("test",), SCIPY_LICENSE, newline)
    yield "no-body", metadata_text("six", "1.16.0", body="")
    yield "folded-requirement", "Name: a\nVersion: 1\nRequires-Dist: numpy\n  <2\nRequires-Dist: b\n\nbody\nRequires-Dist: not-a-header\n"
    yield "duplicate-name", "Name: first\nName: second\nVersion: 2\nRequires-Dist: c>=1\n"
    yield "header-after-junk", "Name: a\nVersion: 1\nnot a header line\nRequires-Dist: hidden\n"
    yield "empty", ""


@pytest.mark.parametrize("text", [t for _, t in header_variants()], ids=[i for i, _ in header_variants()])
def test_reader_matches_importlib_metadata(tmp_path, text):
    folder = tmp_path / "x-1.dist-info"
    folder.mkdir()
    (folder / "METADATA").write_bytes(text.encode())
    parsed = email.message_from_string(text)  # what importlib.metadata parses
    ours = read_distribution(str(folder))
    assert ours["requires"] == (parsed.get_all("Requires-Dist") or [])
    assert ours["extras"] == (parsed.get_all("Provides-Extra") or [])
    assert ours.get("name") == parsed["Name"] and ours.get("version") == parsed["Version"]
    if not any("\n" in r for r in ours["requires"]):  # Python 3.11+ re-indents folded values
        assert ours["requires"] == (metadata.PathDistribution(folder).requires or [])


EGG_REQUIRES = "numpy>=1.21\n# comment\n\n[plot]\nmatplotlib\n[:sys_platform == \"win32\"]\ncolorama\n[socks:python_version < \"3.9\"]\nPySocks\n[url]\nfoo@ https://example.org/foo.whl\n"


def test_egg_info_requirements_come_from_requires_txt_as_importlib_reads_them(tmp_path):
    folder = tmp_path / "legacy-1.0.egg-info"
    folder.mkdir()
    (folder / "PKG-INFO").write_text("Metadata-Version: 1.2\nName: legacy\nVersion: 1.0\n")
    (folder / "requires.txt").write_text(EGG_REQUIRES)
    ours = read_distribution(str(folder))
    assert ours["requires"] == [r for r in metadata.PathDistribution(folder).requires if not r.startswith("#")]
    assert ours["extras"] == ["plot", "socks", "url"]


class EndlessStream:
    """A metadata file that never ends: every read returns a full chunk of `unit`, counted."""

    def __init__(self, first: str, unit: str):
        self.pending, self.unit, self.reads = first, unit, 0

    def read(self, size: int) -> str:
        self.reads += 1
        text, self.pending = (self.pending + self.unit * size)[:size], ""
        return text


@pytest.mark.parametrize("first,unit,most_reads", [
    ("Name: a\nVersion: 1\n\n", "description line\n", 1),  # a huge body: only the headers' chunk is read
    ("Name: a\nLicense: x\n", " continued\n", HEADER_LIMIT // CHUNK),  # an endless folded header: capped
    ("Name: a\nLicense: ", "x", HEADER_LIMIT // CHUNK),  # one endless line
])
def test_header_read_is_bounded(first, unit, most_reads):
    stream = EndlessStream(first, unit)
    block = header_block(stream)
    assert len(block) <= HEADER_LIMIT and stream.reads <= most_reads
    assert block.startswith("Name: a\n")


HEADER_PIECES = (
    "Name: a\n", "Version: 1.0\n", "Requires-Dist: numpy>=1\n", " continued\n", "\tfolded\n", "   \n", "\n", "From x\n",
    "From: a@b\n", "no colon here\n", ":no name\n", "Name:x\r\n", "Version:\r", "Requires-Dist:  spaced  \n", "Provides-Extra: test",
    "X\x0bY: z\n", "Na\u2028me: q\n", "\x85L: v\n", "Key:\n",
)


def test_headers_are_read_exactly_as_the_email_parser_reads_them():
    """importlib.metadata's parser (email, compat32) is the reference, on 5,000 generated header blocks:
    folds, blank continuation lines, envelope lines, lines without a colon, odd line ends and separators."""
    import email.parser
    import email.policy
    import random

    chooser = random.Random(20261126)
    for _ in range(5000):
        block = "".join(chooser.choice(HEADER_PIECES) for _ in range(chooser.randint(0, 8)))
        reference = email.parser.HeaderParser(policy=email.policy.compat32).parsestr(block)
        assert parsed_headers(block) == [(name, str(value)) for name, value in reference.items()], repr(block)


def test_facts_script_under_python_3_8_reads_a_folded_license(tmp_path):
    found = sorted(Path(subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip() or "/nonexistent").glob("versions/3.8.*/bin/python3.8"))
    if not found:
        pytest.skip("no pyenv Python 3.8 on this machine")
    write_dist_info(tmp_path, "scipy", "1.11.4", SCIPY_REQUIRES, SCIPY_LICENSE, ("test",))
    completed = subprocess.run([str(found[-1]), str(SCRIPTS / "facts.py")], capture_output=True, text=True, env={"PYTHONPATH": str(tmp_path)}, check=True)
    [scipy] = [d for d in json.loads(completed.stdout)["distributions"] if d["name"] == "scipy"]
    assert scipy["requires"] == list(SCIPY_REQUIRES) and scipy["extras"] == ["test"]


# --- requirements.unsatisfied from facts ------------------------------------------------------------

PY = "/envs/t/bin/python"


def dist(name: str, version: str, *requires: str) -> dict:
    return {"name": name, "version": version, "location": "/envs/t/lib/python3.11/site-packages", "requires": list(requires)}


def facts(*dists: dict, python=(3, 11, 7), platform: str = "linux", uv: Optional[str] = None) -> dict:
    return {"target": {
        "python": {"version": ".".join(map(str, python)), "version_info": list(python), "executable": PY, "prefix": "/envs/t", "is_venv": True, "platform": platform, "machine": "x86_64"},
        "installers": {"pip": None if uv else "24.0", "uv": uv},
        "distributions": list(dists),
        "torch_build": None,
    }}


def unsatisfied_by_requirer(f: dict) -> dict:
    return {finding.evidence["requirer"]: finding for finding in unsatisfied(f)}


def test_scipy_needing_numpy_1_beside_numpy_2_is_one_finding_of_the_numpy_check():
    f = facts(dist("scipy", "1.11.4", *SCIPY_REQUIRES), dist("numpy", "2.4.6"))
    assert unsatisfied_by_requirer(f) == {}
    [finding] = abi_mismatch(f)
    assert finding.severity.value == "error"
    assert finding.evidence["needs_numpy_1"] == ["scipy 1.11.4 (numpy<1.28.0,>=1.21.6; first built for NumPy 2: 1.13.0)"]
    assert [r.command for r in finding.remedies] == [f"{PY} -m pip install 'numpy<2'", f"{PY} -m pip install 'scipy>=1.13.0'"]


def test_a_release_requiring_numpy_2_under_numpy_1_is_one_finding_of_the_numpy_check():
    f = facts(dist("pandas", "3.1.0", "numpy>=2.0.0"), dist("numpy", "1.26.4"))
    assert unsatisfied_by_requirer(f) == {}
    [finding] = too_old_numpy(f)
    assert finding.evidence["requires_numpy_2"] == ["pandas 3.1.0 (numpy>=2.0.0)"]


@pytest.mark.parametrize("requirer,requirement,installed,severity", [
    ("tqdm", "colorama", (), "warning"),  # missing, outside the stack
    ("pandas", "pytz>=2020.1", (dist("pytz", "2019.3"),), "warning"),
    ("stable-baselines3", "cloudpickle", (), "error"),  # the requirer is in the stack
    ("opencv-python", "numpy>=2.2", (dist("numpy", "2.1.0"),), "error"),  # numpy is the one that conflicts
    ("tensorboard", "torch", (), "error"),
])
def test_unmet_requirements_and_their_severity(requirer, requirement, installed, severity):
    [finding] = unsatisfied_by_requirer(facts(dist(requirer, "1.0", requirement), *installed)).values()
    assert finding.severity.value == severity and finding.evidence["unsatisfied"][0]["requirement"] == requirement


@pytest.mark.parametrize("requirement,installed", [
    ("numpy>=2.0", dist("numpy", "2.1.0rc1")),  # pip check allows pre-releases
    ("numpy>=1", dist("NumPy", "2.0.0")),  # names compared normalized
    ('colorama; platform_system == "Windows"', None),  # a marker false for the target
    ('pytest; extra == "test"', None),  # an extra nobody asks for
    ("odd @ https://example.org/odd.whl", dist("odd", "0.1")),
    ("numpy>=1", dist("numpy", "not-a-version")),  # an installed version that does not parse is not judged
    ('numpy; python_version ~= "3"', None),  # a marker that cannot be evaluated
    ("not a requirement ((", None),
])
def test_satisfied_or_not_applicable_requirements_are_silent(requirement, installed):
    assert unsatisfied_by_requirer(facts(dist("app", "1.0", requirement), *filter(None, [installed]))) == {}


@pytest.mark.parametrize("requires", [None, "numpy<2", 42, [None, 7, {"x": 1}], [["numpy<2"]]])
def test_damaged_requires_in_recorded_facts_are_skipped(requires):
    broken = dist("app", "1.0")
    broken["requires"] = requires
    assert unsatisfied_by_requirer(facts(broken, dist("numpy", "2.0.0"))) == {}


def test_markers_are_evaluated_for_the_target_python_and_platform():
    old = dist("backport", "1.0", 'typing-extensions>=4; python_version < "3.9"', 'pywin32; sys_platform == "win32"')
    assert unsatisfied_by_requirer(facts(old, python=(3, 11, 7))) == {}
    assert list(unsatisfied_by_requirer(facts(old, python=(3, 8, 18)))) == ["backport 1.0"]
    assert unsatisfied_by_requirer(facts(old, platform="win32"))["backport 1.0"].evidence["unsatisfied"] == [{"requirement": "pywin32", "installed": None}]


def test_an_extra_counts_when_an_installed_distribution_asks_for_it_even_through_another_extra():
    lib = dist("lib", "1.0", 'requests[socks]; extra == "net"', 'missing-one; extra == "unused"')
    requests = dist("requests", "2.31.0", 'PySocks!=1.5.7,>=1.5.6; extra == "socks"')
    app = dist("app", "1.0", "lib[net]")
    assert unsatisfied_by_requirer(facts(lib, requests)) == {}
    [finding] = unsatisfied_by_requirer(facts(app, lib, requests)).values()
    assert finding.evidence == {"requirer": "requests 2.31.0", "unsatisfied": [{"requirement": "PySocks!=1.5.7,>=1.5.6", "installed": None}]}


def test_one_finding_per_requirer_with_every_unmet_requirement_and_the_uv_command():
    f = facts(dist("app", "1.0", "numpy>=2.1", "missing[extra]>=3"), dist("numpy", "2.0.0"), uv="/usr/bin/uv")
    [finding] = unsatisfied(f)
    assert finding.title == "app 1.0 requires numpy>=2.1 (2.0.0 is installed); missing[extra]>=3 (not installed)"
    assert finding.remedies[0].command == f"/usr/bin/uv pip install --python {PY} 'numpy>=2.1' 'missing[extra]>=3'"


def test_torch_cuda_pins_are_left_to_wheels_torch_pins():
    linux = ' ; platform_system == "Linux"'
    f = facts(dist("torch", "2.3.1", f"nvidia-cublas-cu12==12.1.3.1{linux}", "filelock"))
    assert [finding.evidence["unsatisfied"] for finding in unsatisfied(f)] == [[{"requirement": "filelock", "installed": None}]]


DAMAGED_REQUIRES = (None, 42, "numpy<1", {"numpy": "<1"}, [None, 7, ["numpy<1"]], ["x; python_version ~= '3'", "((("])


def test_damaged_requirements_in_a_recorded_report_are_judged_without_crashing(envdoctor, tmp_path):
    """Every damaged form at once, one per distribution; the one real conflict is still found."""

    def damage(facts: dict) -> None:
        listed = facts["target"]["distributions"]
        for entry, requires in zip(listed[1:], DAMAGED_REQUIRES):
            entry["requires"] = requires
        listed.append(dist("oldext", "0.9", "numpy<1.20"))
        listed[0]["requires"] = []

    report = changed_report(REPO / "tests" / "data" / "gpu" / "driver470-cu121.json", tmp_path / "r.json", damage)
    run = envdoctor("check", "--from", str(report), "--only", "requirements", "--json", "-")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run
    assert_checks_ran(run.json(), "requirements")
    found = findings_by_id(run.json())
    assert list(found) == ["requirements.unsatisfied"]
    assert [f["evidence"]["requirer"] for f in found["requirements.unsatisfied"]] == ["oldext 0.9"]


# --- leaves and families for the planners -----------------------------------------------------------

ENVIRONMENT = (
    dist("pip", "24.0"), dist("setuptools", "69.0.0"), dist("wheel", "0.42.0"),
    dist("torch", "2.3.1", "filelock", "numpy"), dist("filelock", "3.13.1"), dist("nvidia-cublas-cu12", "12.1.3.1"),
    dist("numpy", "1.26.4"),
    dist("matplotlib", "3.8.2", "contourpy>=1.0.1", "cycler", "numpy<2,>=1.21", "pyparsing"),
    dist("contourpy", "1.2.0", "numpy", 'matplotlib; extra == "mypy"', 'bokeh; extra == "bokeh"'),
    dist("cycler", "0.12.1", 'ipython; extra == "docs"'), dist("pyparsing", "3.1.1", 'railroad-diagrams; extra == "diagrams"'),
    dist("pandas", "2.1.4", "numpy>=1.23", 'matplotlib>=3.6.1; extra == "plot"', 'tqdm; extra == "all"'),
    dist("scikit-learn", "1.3.2", "numpy", 'pandas>=1.0.5; extra == "benchmark"', 'matplotlib; extra == "examples"'),
    dist("tqdm", "4.66.1", 'colorama; platform_system == "Windows"'),
    dist("stable-baselines3", "2.2.1", "torch>=1.13", "numpy", 'tqdm; extra == "extra"', 'rich; extra == "extra"'),
    dist("sb3-contrib", "2.2.1", "stable-baselines3>=2.2.1"),
    dist("rich", "13.7.0"),
    dist("envdoctor", "0.1.0", "rich>=13", "click>=8.1", "packaging>=23"), dist("click", "8.1.7"), dist("packaging", "23.2"),
)


def test_leaves_are_the_users_top_level_packages():
    # click, packaging and rich are envdoctor's own dependencies, not the user's packages
    assert leaves(facts(*ENVIRONMENT)) == ("matplotlib", "pandas", "sb3-contrib", "scikit-learn", "tqdm")


def test_a_requested_extra_hides_the_leaves_it_brings():
    asking = dist("sb3-contrib", "2.2.1", "stable-baselines3[extra]>=2.2.1")
    assert leaves(facts(*[d for d in ENVIRONMENT if d["name"] != "sb3-contrib"], asking)) == ("matplotlib", "pandas", "sb3-contrib", "scikit-learn")


def test_mixed_wheels_keeps_a_family_required_behind_a_folded_license(venvs, envdoctor):
    """tensorflow-like metadata whose License header the old reader stopped at: cu11 stays, cu12 goes."""
    python = venvs.get("mixed-folded-license")
    site = site_packages(python)
    write_dist_info(site, "tfish", "2.14.0", ["nvidia-cuda-runtime-cu11==11.8.89"], SCIPY_LICENSE)
    write_dist_info(site, "nvidia-cuda-runtime-cu11", "11.8.89")
    write_dist_info(site, "nvidia-cuda-runtime-cu12", "12.1.105")
    write_dist_info(site, "pip", "24.0")  # the plan's installer; the plan only names it
    run = envdoctor("fix", "--mixed-wheels", "--python", str(python), "--json", "-")
    assert run.returncode == 0, run
    plan = run.json()["plan"]
    assert plan["steps"][0]["argv"][-1:] == ["nvidia-cuda-runtime-cu12"] and plan["expect"]["families"] == ["cu11"]
    assert "cu11 (needed by tfish)" in plan["steps"][0]["reason"]


def test_mixed_wheels_keeps_a_family_of_an_extra_that_looks_installed():
    f = facts(
        dist("tensorflow", "2.14.0", 'nvidia-cublas-cu11==11.11.3.6; extra == "and-cuda"', 'tensorrt; extra == "and-cuda"'),
        dist("jax", "0.4.20", 'nvidia-cublas-cu12; extra == "cuda12-pip"', 'nvidia-cudnn-cu12; extra == "cuda12-pip"'),
        dist("nvidia-cublas-cu11", "11.11.3.6"), dist("tensorrt", "8.5.3.1"), dist("nvidia-cublas-cu12", "12.1.3.1"),
    )
    plan = plan_mixed_wheels(f, Installer("pip", PY))
    assert plan.expect.families == ("cu11",) and plan.steps[0].argv[5:] == ("nvidia-cublas-cu12",)


# --- through the CLI on real venvs ------------------------------------------------------------------


def licensed_wheel(folder: Path, name: str, version: str, requires: Iterable[str], license: str) -> Path:
    """A real wheel built with zipfile: a module, METADATA, WHEEL and RECORD."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"__version__ = {version!r}\n",
        f"{info}/METADATA": metadata_text(name, version, requires, ("test",), license),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: envdoctor-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    return packed_wheel(folder / f"{name}-{version}-py3-none-any.whl", info, files)


@pytest.mark.slow
def test_real_wheel_with_a_folded_license_beside_numpy_2(venvs, envdoctor, tmp_path):
    python = venvs.get("scipy-like-numpy2", ["numpy>=2"])
    wheel = licensed_wheel(tmp_path, "scipy", "1.11.4", SCIPY_REQUIRES, SCIPY_LICENSE)
    pip(["install", "-q", "--no-deps", "--no-index", str(wheel)], python)
    run = envdoctor("check", "--no-probe", "--no-save", "--only", "requirements,numpy", "--python", str(python), "--json", "-")
    assert run.returncode == 1, run
    found = findings_by_id(run.json())
    assert "requirements.unsatisfied" not in found  # numpy<1.28 beside NumPy 2 is the numpy check's one finding
    [finding] = found["numpy.abi-mismatch"]
    assert finding["evidence"]["needs_numpy_1"] == ["scipy 1.11.4 (numpy<1.28.0,>=1.21.6; first built for NumPy 2: 1.13.0)"]
    consistent = envdoctor("check", "--no-probe", "--no-save", "--only", "requirements", "--python", sys.executable, "--json", "-")
    assert consistent.returncode == 0 and "requirements.unsatisfied" not in findings_by_id(consistent.json()), consistent


def test_pin_cuda_11_6_on_python_3_11_plans_a_new_environment_with_the_leaves(venvs, envdoctor):
    python = venvs.get("pin-cuda-leaves")
    site = site_packages(python)
    for d in ENVIRONMENT:
        write_dist_info(site, d["name"], d["version"], d["requires"], SCIPY_LICENSE if d["name"] == "matplotlib" else "")
    run = envdoctor("fix", "--pin-cuda", "11.6", "--offline", "--python", str(python), "--json", "-")
    assert run.returncode == 0, run
    plan = run.json()["plan"]
    assert plan["alternative"] and "supports Python 3.11" in plan["refusal"]
    rest = plan["steps"][2]
    leaves_in_majors = ["matplotlib>=3,<4", "pandas>=2,<3", "sb3-contrib>=2,<3", "scikit-learn>=1,<2", "tqdm>=4,<5"]
    assert rest["summary"] == "Install the rest of this environment's top-level packages: " + ", ".join(leaves_in_majors)
    assert rest["argv"][-7:-2] == leaves_in_majors and "numpy<2" in rest["argv"]
    assert not (site / "torch").exists() and len(list(site.glob("*.dist-info"))) == len(ENVIRONMENT)


PROBED_H100 = REPO / "reports" / "samples" / "h100-cu130.json"  # every probe stage passed, SB3 learned and saved


def sb3_wants_older_gymnasium(facts):
    sb3 = next(d for d in facts["target"]["distributions"] if d["name"] == "stable_baselines3")
    sb3["requires"] = ["gymnasium<1.1,>=0.29.1" if r.startswith("gymnasium") else r for r in sb3["requires"]]


def test_a_stack_requirement_the_whole_ladder_ran_past_is_a_warning_that_says_so(tmp_path):
    probed = changed_report(PROBED_H100, tmp_path / "probed.json", sb3_wants_older_gymnasium)
    [finding] = findings_by_id(judge_recorded(probed, only="requirements"))["requirements.unsatisfied"]
    assert finding["severity"] == "warning" and "save/load round trip" in finding["evidence"]["disproved_by_probe"]
    report = json.loads(probed.read_text())
    report["probe"] = None
    (tmp_path / "unprobed.json").write_text(json.dumps(report))
    [unprobed] = findings_by_id(judge_recorded(tmp_path / "unprobed.json", only="requirements"))["requirements.unsatisfied"]
    assert unprobed["severity"] == "error" and unprobed["title"] == finding["title"]


def test_installed_extras_are_those_whose_every_added_requirement_is_installed():
    """Against the definition, evaluated the long way (every requirement under every extra), on this
    interpreter's real distributions (Ray's dozens of extras among them) and on markers that name
    extras in every shape packaging writes."""
    from packaging.requirements import Requirement
    from packaging.markers import default_environment

    from envdoctor.facts.requirements import Markers, applies, installed_extras, parsed_requirements
    from envdoctor.facts.target import normalize

    def by_definition(parsed, environment):
        found = {}
        for name, requirements in parsed.items():
            extras = {normalize(e) for r in requirements if r.marker is not None for e in re.findall(r"""\bextra\s*==\s*['"]([^'"]+)['"]""", str(r.marker))}
            for extra in extras:
                added = [r for r in requirements if applies(r, environment, (extra,)) and not applies(r, environment)]
                if added and all(normalize(r.name) in parsed for r in added):
                    found.setdefault(name, set()).add(extra)
        return found

    parsed = {normalize(d.metadata["Name"]): parsed_requirements({"requires": d.requires or []}) for d in metadata.distributions()}
    parsed["made-up"] = [Requirement(line) for line in (
        'numpy; extra == "Fast_Math"', 'torch; extra == "gpu" and python_version >= "3"', 'nosuchpkg; extra == "gpu"',
        'packaging; extra != "lite"', 'pytest; (extra == "test" or extra == "dev") and sys_platform != "nowhere"',
    )]
    environment = default_environment()
    assert installed_extras(parsed, Markers(environment)) == by_definition(parsed, environment)
    assert installed_extras(parsed, Markers(environment))["made-up"] == {"fast-math", "test", "dev"}


def test_the_requirements_in_effect_are_those_of_every_line_parsed():
    """Lines behind an extra nobody asked for are left unparsed; the graph must be the one every line
    parsed and every marker evaluated gives: on this interpreter's real distributions and on extras
    asked for in other spellings, through a chain of extras."""
    from envdoctor.facts.requirements import applies, parsed_requirements, requirements_in_effect
    from envdoctor.facts.target import TargetView, normalize

    def by_definition(distributions, environment):
        parsed = {name: parsed_requirements(dist) for name, dist in distributions.items()}
        requested: dict = {}
        while True:
            asked = {normalize(r.name): {normalize(e) for e in r.extras} for name, rs in parsed.items() for r in rs if r.extras and applies(r, environment, requested.get(name, ()))}
            grown = {name: requested.get(name, set()) | asked.get(name, set()) for name in set(requested) | set(asked)}
            if grown == requested:
                break
            requested = grown
        return {name: [str(r) for r in rs if applies(r, environment, requested.get(name, ()))] for name, rs in parsed.items()}

    real = [{"name": d.metadata["Name"], "version": d.version, "requires": d.requires or []} for d in metadata.distributions()]
    made_up = [
        {"name": "app", "version": "1", "requires": ["lib[Fast_Math]", 'unused; extra == "never"']},
        {"name": "lib", "version": "1", "requires": ['numpy; extra == "fast-math"', "lib[gpu]; extra == 'fast.math'", 'torch ; extra == "GPU"', 'nothing; extra == "cpu"']},
    ]
    view = TargetView.from_json({"python": {"version": "3.11.7"}, "distributions": real + made_up})
    environment = view.marker_environment()
    graph = {name: [str(r) for r in rs] for name, rs in requirements_in_effect(view).items()}
    assert graph == by_definition(view.distributions, environment)
    assert [line.split(";")[0].strip() for line in graph["lib"]] == ["numpy", "lib[gpu]", "torch"]
    assert graph["app"] == ["lib[Fast_Math]"]


def test_a_marker_is_judged_for_the_extras_it_names_as_for_every_extra():
    """Markers.applies tries only the asked-for extras a marker names in `extra == "..."`; against every
    asked-for extra evaluated by packaging itself, on this interpreter's real requirements and on the
    other ways a marker can speak of extra."""
    from packaging.markers import default_environment
    from packaging.requirements import Requirement

    from envdoctor.facts.requirements import Markers, parsed_requirements

    lines = [line for d in metadata.distributions() for line in d.requires or []] + [
        "a; 'gpu' == extra", 'b; extra != "lite"', 'c; platform_machine == "extra_fast" or extra == "x"',
        'd; extra == "Fast_Math" and python_version >= "3"', 'e; (extra == "test" or extra == "dev") and sys_platform != "nowhere"',
    ]
    requirements = parsed_requirements({"requires": lines})
    environment = default_environment()
    named = {e for r in requirements if r.marker is not None for e in re.findall(r"""['"]([\w.-]+)['"]""", str(r.marker))}
    asked = sorted(named)[:60] + ["gpu", "lite", "fast-math", "dev"]

    def by_packaging(requirement):
        return requirement.marker is None or any(safe_evaluate(requirement, e) for e in ["", *asked])

    def safe_evaluate(requirement, extra):
        try:
            return requirement.marker.evaluate({**environment, "extra": extra})
        except ValueError:
            return False

    markers = Markers(environment)
    wrong = [str(r) for r in requirements if markers.applies(r, asked) != by_packaging(r)]
    assert not wrong, wrong[:5]
    assert markers.applies(Requirement("a; 'gpu' == extra"), ["gpu"]) and not markers.applies(Requirement("a; 'gpu' == extra"), ["cpu"])
