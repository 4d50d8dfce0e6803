"""On a machine with a real NVIDIA GPU: `fix --pin-cuda 12.8` and `13.0` (plan only) choose a torch whose
build has kernels for every GPU nvidia-smi reports, or refuse and name builds that do. Marked `gpu`;
elsewhere each test says it was skipped because there is no driver, never silently."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from envdoctor.knowledge import arches
from envdoctor.knowledge.torch_matrix import find, variant_tag

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def capabilities():
    if not shutil.which("nvidia-smi"):
        pytest.skip("no NVIDIA driver here: run `pytest -m gpu` on a GPU machine")
    out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True, text=True, check=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def runs_on(capabilities, torch: str, cuda: str) -> bool:
    return all(arches.support(cc, variant_tag(cuda), torch) in (arches.SASS, arches.PTX) for cc in capabilities)


@pytest.mark.parametrize("cuda", ["12.8", "13.0"])
def test_a_pin_plans_a_torch_with_kernels_for_this_gpu(envdoctor, capabilities, cuda):
    run = envdoctor("fix", "--pin-cuda", cuda, "--offline", "--format", "json")
    plan = run.json()["plan"]
    if plan["refusal"] and not plan["alternative"]:
        assert run.returncode == 1 and plan["steps"] == [] and plan["instead"], plan
        for line in plan["instead"]:
            options, build = line.split("  (torch ")
            torch, tag = build.rstrip(")").split("+cu")
            assert runs_on(capabilities, torch, f"{tag[:-1]}.{tag[-1]}"), line
        return
    torch = plan["expect"]["torch_version"].split("+")[0]
    assert find(torch) and runs_on(capabilities, torch, cuda), plan["title"]
