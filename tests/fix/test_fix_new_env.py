"""A new environment for torch 1.13.1+cu116 planned from real package metadata and checked by pip.

The wheels of stable-baselines3, sb3-contrib, gymnasium, NumPy, pandas, matplotlib and what they need
are downloaded once into .cache/fix-wheels (git-ignored); torch 1.13.1+cu116 is a tiny stand-in wheel
with torch's own Requires-Dist, since the real one is gigabytes. The planner reads the other releases
from that folder, and pip's dry run resolves the plan's line against it with no index at all.
"""

from __future__ import annotations

import subprocess

import pytest
from packaging.version import Version

from conftest import REPO
from envdoctor.fix import dry_run
from envdoctor.fix.installer import Installer
from envdoctor.fix.pin_cuda import Request, plan_pin_cuda
from envdoctor.fix.releases import WheelFolder
from helpers.local_wheels import write_wheel
from helpers.pythons import needed_python

pytestmark = pytest.mark.slow

CACHE = REPO / ".cache" / "fix-wheels"
STACK = ("torch==1.13.1+cu116", "numpy<2", "stable-baselines3==2.3.2", "sb3-contrib==2.3.0", "pandas>=2,<3", "matplotlib>=3,<4")
INSTALLED = ("stable-baselines3==2.7.0", "sb3-contrib==2.7.0", "gymnasium==1.0.0")  # metadata only: what the user has now
PY = "/envs/rl/bin/python"


@pytest.fixture(scope="session")
def wheels() -> WheelFolder:
    """The wheel folder, downloaded on first use by Python 3.10's own pip (so its tags fit)."""
    done = CACHE / ".done"
    if not done.exists():
        python = needed_python("3.10")
        standin = CACHE.parent / "fix-standin"
        write_wheel(standin, "torch", "1.13.1+cu116", ["typing-extensions"], ">=3.7.0")
        commands = [["--find-links", str(standin), *STACK], *(["--no-deps", r] for r in INSTALLED)]
        for args in commands:
            got = subprocess.run([python, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "-d", str(CACHE), *args], capture_output=True, text=True)
            if got.returncode:
                pytest.fail(f"cannot download {args}: {got.stderr.strip().splitlines()[-1:]}")
        done.touch()
    return WheelFolder(CACHE)


def metadata(index: WheelFolder, requirement: str) -> dict:
    """An installed distribution's facts, its requirements read from the real wheel."""
    name, version = requirement.split("==")
    release = index.release(name, Version(version))
    return {"name": name, "version": version, "location": "/envs/rl/lib/python3.11/site-packages", "requires": list(release.requires)}


def dist(name: str, version: str, *requires: str) -> dict:
    return {"name": name, "version": version, "location": "/envs/rl/lib/python3.11/site-packages", "requires": list(requires)}


def rl_facts(index: WheelFolder) -> dict:
    """A Python 3.11 venv with torch 2.5.1, the SB3 stack, NumPy 2, envdoctor and a cu12 CuPy."""
    return {
        "target": {
            "python": {"version": "3.11.9", "version_info": [3, 11, 9], "executable": PY, "prefix": "/envs/rl", "is_venv": True, "platform": "linux"},
            "installers": {"pip": "24.0", "uv": None},
            "distributions": [
                dist("torch", "2.5.1", "typing-extensions>=4.8.0", "numpy; extra == \"numpy\""),
                dist("numpy", "2.2.1"), dist("typing-extensions", "4.12.2"),
                *(metadata(index, r) for r in INSTALLED),
                dist("pandas", "2.2.3", 'numpy>=1.23.2; python_version == "3.11"'), dist("matplotlib", "3.9.2", "numpy>=1.23"),
                dist("cloudpickle", "3.1.0"), dist("farama-notifications", "0.0.4"),
                dist("envdoctor", "0.1.0", "click>=8", "rich>=13"), dist("click", "8.1.7"), dist("rich", "13.9.4", "markdown-it-py>=2.2.0"),
                dist("markdown-it-py", "3.0.0"), dist("cupy-cuda12x", "13.3.0", "numpy<2.3,>=1.22"),
            ],
            "torch_build": {"version": "2.5.1+cu124", "cuda": "12.4"},
        },
        "gpu": {"source": "none", "driver": None, "gpus": [], "reason": "no NVIDIA driver (no /proc/driver/nvidia)"},
        "pythons": {"interpreters": [{"minor": "3.10", "path": needed_python("3.10")}], "conda": None},
    }


def test_torch_1_13_in_a_new_environment_keeps_numpy_below_2_and_puts_the_sb3_stack_back(wheels, monkeypatch):
    plan = plan_pin_cuda(rl_facts(wheels), Installer("pip", PY), Request("11.6"), wheels)
    assert plan.alternative and plan.expect.torch_version == "1.13.1+cu116"
    moved = {c.name: (c.installed, c.planned) for c in plan.versions}
    assert moved == {"stable-baselines3": ("2.7.0", "2.3.2"), "sb3-contrib": ("2.7.0", "2.3.0"), "gymnasium": ("1.0.0", "0.29.1")}
    install = plan.steps[1].argv
    assert install[4:10] == ("torch==1.13.1+cu116", "numpy<2", "gymnasium==0.29.1", "sb3-contrib==2.3.0", "stable-baselines3==2.3.2", "--extra-index-url")
    installs = [a for s in plan.steps if s.argv[1:4] == ("-m", "pip", "install") for a in s.argv[4:]]
    assert not {a.split("=")[0].split(">")[0] for a in installs} & {"click", "rich", "markdown-it-py", "envdoctor", "cupy-cuda12x"}
    assert plan.steps[2].reason == "nothing else is installed at top level"  # sb3-contrib, the one leaf, is put back
    assert "not carried, tied to another CUDA family: cupy-cuda12x 13.3.0 (cu12): no cu11 counterpart" in plan.notes

    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(CACHE))
    monkeypatch.delenv("PIP_CONSTRAINT", raising=False)
    checked = dry_run.resolved(plan, "24.0")
    resolved = dict(line.split("==") for line in checked.resolved)
    assert checked.refusal == plan.refusal and checked.steps == plan.steps
    assert resolved["torch"] == "1.13.1+cu116" and resolved["stable-baselines3"] == "2.3.2" and resolved["sb3-contrib"] == "2.3.0"
    assert Version(resolved["numpy"]).major == 1
    assert Version(resolved["pandas"]).major == 2 and Version(resolved["matplotlib"]).major == 3
