"""Plans of `envdoctor fix`, built from facts of the shape the collectors produce.

Expected torch versions come from the release table in the domain notes (§2: torch ↔ torchvision ↔
torchaudio ↔ Python ↔ CUDA variants), written out here independently of the knowledge CSV.
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence, Tuple

import pytest

from envdoctor.errors import UsageError
from envdoctor.fix.installer import Installer
from envdoctor.fix.mixed_wheels import plan_mixed_wheels
from envdoctor.fix.pin_cuda import Request, plan_pin_cuda
from envdoctor.fix.plan import Plan, StepKind, StepStatus
from envdoctor.fix.releases import WheelFolder
from envdoctor.fix.render import sh, text
from helpers.local_wheels import write_wheel
from envdoctor.fix.threads import plan_threads

PY = "/envs/seed/bin/python"
PIP = Installer("pip", PY)
CU12_TORCH_231 = (
    "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-runtime-cu12", "nvidia-cuda-cupti-cu12", "nvidia-cudnn-cu12",
    "nvidia-cublas-cu12", "nvidia-cufft-cu12", "nvidia-curand-cu12", "nvidia-cusolver-cu12",
    "nvidia-cusparse-cu12", "nvidia-nccl-cu12", "nvidia-nvtx-cu12",
)
LINUX = ' ; platform_system == "Linux" and platform_machine == "x86_64"'


def dist(name: str, version: str, *requires: str) -> dict:
    return {"name": name, "version": version, "location": "/envs/seed/lib/site-packages", "requires": list(requires)}


def torch_231_cu121() -> list:
    """torch 2.3.1 from PyPI (its default cu121 build) with the cu12 wheels it pins (PyPI metadata shape)."""
    return [
        dist("torch", "2.3.1", "filelock", *(f"{n}==12.1.105{LINUX}" for n in CU12_TORCH_231), f"triton==2.3.1{LINUX}"),
        *(dist(n, "12.1.105") for n in CU12_TORCH_231),
        dist("nvidia-nvjitlink-cu12", "12.9.86"),
        dist("triton", "2.3.1", "filelock"),
        dist("filelock", "3.13.1"),
    ]


def facts(
    python: Tuple[int, int, int] = (3, 8, 18),
    dists: Iterable[dict] = (),
    torch_cuda: Optional[str] = None,
    torch_version: Optional[str] = None,
    driver: Optional[str] = None,
    gpus: Sequence[dict] = (),
    pythons: Sequence[dict] = (),
    conda: Optional[str] = None,
) -> dict:
    """Facts shaped like the target, gpu and pythons collectors' output."""
    return {
        "target": {
            "python": {
                "version": ".".join(map(str, python)),
                "version_info": list(python),
                "executable": PY,
                "prefix": "/envs/seed",
                "is_venv": True,
                "platform": "linux",
            },
            "installers": {"pip": "24.0", "uv": None},
            "distributions": list(dists),
            "torch_build": {"version": torch_version, "cuda": torch_cuda} if torch_version else None,
        },
        "gpu": {"source": "nvml", "driver": {"version": driver, "cuda": None}, "gpus": list(gpus)} if driver
        else {"source": "none", "driver": None, "gpus": [], "reason": "no NVIDIA driver (no /proc/driver/nvidia)"},
        "pythons": {"interpreters": list(pythons), "conda": conda},
    }


def seed_facts(*extra: dict, python=(3, 8, 18), driver=None) -> dict:
    return facts(python, [*torch_231_cu121(), *extra], torch_cuda="12.1", torch_version="2.3.1+cu121", driver=driver)


def install_step(plan: Plan):
    return next(s for s in plan.steps if s.kind is StepKind.INSTALL and s.planned)


def pin(f: dict, cuda: str, **request) -> Plan:
    return plan_pin_cuda(f, PIP, Request(cuda, **request))


def pin_with(f: dict, cuda: str, index, **request) -> Plan:
    return plan_pin_cuda(f, PIP, Request(cuda, **request), index)


# --- the seed: Python 3.8, torch 2.3.1+cu121 with cu12 wheels, pin 11.6 ---------------------------


def test_seed_case_pins_1_13_1_cu116_and_removes_every_cu12_wheel():
    plan = pin(seed_facts(dist("torchvision", "0.18.1", "torch==2.3.1"), dist("torchaudio", "2.3.1", "torch==2.3.1")), "11.6")
    assert plan.applicable and not plan.alternative
    remove, pinned, install, verify, ladder = plan.steps
    assert remove.argv == (PY, "-m", "pip", "uninstall", "-y", *sorted((*CU12_TORCH_231, "nvidia-nvjitlink-cu12")))
    assert pinned.status is StepStatus.SKIPPED
    assert install.argv == (
        PY, "-m", "pip", "install",
        "torch==1.13.1+cu116", "torchvision==0.14.1+cu116", "torchaudio==0.13.1+cu116",
        "--extra-index-url", "https://download.pytorch.org/whl/cu116",
    )
    assert verify.kind is StepKind.VERIFY and verify.argv[0] == PY
    assert ladder.kind is StepKind.VERIFY and ladder.argv == ("envdoctor", "check", "--python", PY, "--only", "probe", "--no-save")
    assert "sb3_contrib, MaskablePPO construct, learn, save/load" in ladder.summary and plan.expect.ladder
    assert plan.expect.installed == {"torch": "1.13.1+cu116", "torchvision": "0.14.1+cu116", "torchaudio": "0.13.1+cu116"}
    assert set(plan.expect.absent) == {*CU12_TORCH_231, "nvidia-nvjitlink-cu12"}
    assert plan.expect.families == ("cu11",)
    assert any(note.startswith("driver unknown (no NVIDIA driver") for note in plan.notes)


def test_seed_case_without_companions_installs_torch_alone():
    plan = pin(seed_facts(), "11.6")
    assert install_step(plan).argv[4:] == ("torch==1.13.1+cu116", "--extra-index-url", "https://download.pytorch.org/whl/cu116")


def test_companion_is_added_when_asked():
    plan = pin(seed_facts(), "11.6", with_packages=("torchvision",))
    assert "torchvision==0.14.1+cu116" in install_step(plan).argv


def test_offline_a_package_that_pins_the_old_torch_is_put_back_in_its_major_and_the_plan_says_it_assumed():
    plan = pin(seed_facts(dist("my-extension", "1.0", "torch==2.3.1"), dist("stable-baselines3", "2.0.0", "torch>=1.11")), "11.6")
    assert plan.steps[1].status is StepStatus.SKIPPED
    assert install_step(plan).argv[4:6] == ("torch==1.13.1+cu116", "my-extension>=1,<2")
    assert [(v.name, v.planned, v.requirement) for v in plan.versions] == [("my-extension", None, "my-extension>=1,<2")]
    assert "versions assumed, not looked up: my-extension" in " ".join(plan.notes)
    assert "stable-baselines3" not in " ".join(a for s in plan.steps for a in s.argv)


# --- a plan resolved against the packages' own metadata (a folder of wheels) -----------------------


def index_of(tmp_path, *wheels) -> WheelFolder:
    for name, version, *requires in wheels:
        write_wheel(tmp_path / "wheels", name, version, requires)
    return WheelFolder(tmp_path / "wheels")


SB3_WHEELS = (
    ("stable-baselines3", "2.7.0", "torch<3.0,>=2.3", "gymnasium<1.3.0,>=0.29.1"),
    ("stable-baselines3", "2.3.2", "torch>=1.13", "gymnasium<0.30,>=0.28.1"),
    ("sb3-contrib", "2.7.0", "stable_baselines3<3.0,>=2.7.0"),
    ("sb3-contrib", "2.3.0", "stable_baselines3>=2.3.0"),
    ("my-extension", "1.0", "torch==2.3.1"),
)


def sb3_stack(*extra: dict, python=(3, 8, 18)) -> dict:
    return seed_facts(
        dist("stable-baselines3", "2.7.0", "torch<3.0,>=2.3", "gymnasium<1.3.0,>=0.29.1"),
        dist("sb3-contrib", "2.7.0", "stable_baselines3<3.0,>=2.7.0"),
        dist("gymnasium", "0.29.1", "numpy>=1.21"),
        *extra,
        python=python,
    )


def test_every_package_the_pin_breaks_is_put_back_at_the_newest_release_that_admits_it(tmp_path):
    plan = pin_with(sb3_stack(dist("my-extension", "1.0", "torch==2.3.1")), "11.6", index_of(tmp_path, *SB3_WHEELS))
    changes = {v.name: v for v in plan.versions}
    assert (changes["stable-baselines3"].installed, changes["stable-baselines3"].planned) == ("2.7.0", "2.3.2")
    assert "it requires torch<3.0,>=2.3 and the plan pins torch 1.13.1+cu116" in changes["stable-baselines3"].why
    assert changes["sb3-contrib"].planned == "2.3.0" and "stable_baselines3<3.0,>=2.7.0" in changes["sb3-contrib"].why
    assert changes["my-extension"].lost and "no release in the wheels in" in changes["my-extension"].why
    assert set(changes) == {"stable-baselines3", "sb3-contrib", "my-extension"}
    remove_lost, install = plan.steps[1], install_step(plan)
    assert remove_lost.argv[-1:] == ("my-extension",) and "my-extension 1.0 will be lost, because" in remove_lost.reason
    assert install.argv[4:7] == ("torch==1.13.1+cu116", "sb3-contrib==2.3.0", "stable-baselines3==2.3.2")
    assert plan.expect.installed == {"torch": "1.13.1+cu116", "sb3-contrib": "2.3.0", "stable-baselines3": "2.3.2"}
    assert "my-extension" in plan.expect.absent and "stable-baselines3" not in plan.expect.absent
    assert "sb3-contrib 2.7.0 → 2.3.0" in text(plan)


def test_a_put_back_keeps_the_major_unless_no_release_of_it_admits_the_pin(tmp_path):
    index = index_of(tmp_path, ("rl-zoo", "3.1", "torch>=2.3"), ("rl-zoo", "3.0", "torch>=2.2"), ("rl-zoo", "2.9", "torch>=1.11"))
    change, = pin_with(seed_facts(dist("rl-zoo", "3.1", "torch>=2.3")), "11.6", index).versions
    assert change.planned == "2.9" and "no release of major 3 fits, so the major changes" in change.why


def test_torch_before_2_3_holds_numpy_below_2_and_moves_what_requires_numpy_2(tmp_path):
    index = index_of(tmp_path, ("opencv-python", "4.12.0.88", 'numpy<2.3.0,>=2; python_version >= "3.9"'), ("opencv-python", "4.11.0.86", "numpy>=1.21.2"))
    f = seed_facts(dist("numpy", "2.1.0"), dist("opencv-python", "4.12.0.88", 'numpy<2.3.0,>=2; python_version >= "3.9"'), python=(3, 10, 13))
    plan = pin_with(f, "11.6", index)
    assert install_step(plan).argv[4:7] == ("torch==1.13.1+cu116", "numpy<2", "opencv-python==4.11.0.86")
    assert any(n.startswith("numpy<2: torch 1.13.1 was built against NumPy 1.x") for n in plan.notes)
    assert "numpy<2" not in install_step(pin_with(f, "12.1", index)).argv


def test_extra_only_torch_requirements_do_not_count_as_pins():
    plan = pin(seed_facts(dist("gymnasium", "0.29.1", 'torch>=2.3; extra == "all"')), "11.6")
    assert plan.steps[1].status is StepStatus.SKIPPED


def test_already_pinned_environment_has_nothing_to_change():
    done = facts((3, 8, 18), [dist("torch", "1.13.1+cu116", "typing-extensions")], torch_cuda="11.6", torch_version="1.13.1+cu116")
    plan = pin(done, "11.6")
    assert not plan.changes and not plan.applicable
    assert plan.steps[2].reason == "already installed at exactly these versions"


# --- Python outside every build of the asked CUDA: a new environment ------------------------------


def test_python_3_11_pin_11_6_is_refused_in_place_with_a_venv_from_a_found_python():
    f = seed_facts(python=(3, 11, 9))
    f["pythons"]["interpreters"] = [
        {"minor": "3.9", "path": "/usr/bin/python3.9"},
        {"minor": "3.10", "path": "/opt/pyenv/versions/3.10.13/bin/python3.10"},
        {"minor": "3.12", "path": "/usr/bin/python3.12"},
    ]
    f["target"]["distributions"].append(dist("stable-baselines3", "2.3.2", "torch>=1.13", "numpy"))
    f["target"]["distributions"].append(dist("numpy", "1.26.4"))
    plan = pin(f, "11.6")
    assert plan.alternative and not plan.applicable and not plan.blocked
    assert "Python 3.11" in plan.refusal and "3.7–3.10" in plan.refusal
    create, install, rest, verify, ladder = plan.steps
    assert create.kind is StepKind.CREATE_ENV
    assert create.argv == ("/opt/pyenv/versions/3.10.13/bin/python3.10", "-m", "venv", "/envs/seed-cu116")
    assert install.argv == (
        "/envs/seed-cu116/bin/python", "-m", "pip", "install",
        "torch==1.13.1+cu116", "numpy<2", "--extra-index-url", "https://download.pytorch.org/whl/cu116",
    )
    assert rest.argv[4:] == ("torch==1.13.1+cu116", "numpy<2", "stable-baselines3>=2,<3", "--extra-index-url", "https://download.pytorch.org/whl/cu116")
    assert "filelock" not in rest.argv
    assert verify.argv[0] == "/envs/seed-cu116/bin/python"
    assert ladder.argv == ("envdoctor", "check", "--python", "/envs/seed-cu116/bin/python", "--only", "probe", "--no-save")


def test_a_new_environment_carries_the_users_majors_and_neither_the_doctors_packages_nor_other_cuda_families(tmp_path):
    f = seed_facts(
        dist("envdoctor", "0.1.0", "click>=8", "rich>=13"), dist("click", "8.1.7"), dist("rich", "13.7.1"),
        dist("pandas", "2.2.3", "numpy>=1.22.4"), dist("shapely", "1.8.5"), dist("opencv-python", "4.10.0.84", "numpy>=1.21.2"),
        dist("cupy-cuda12x", "13.3.0", "numpy<2.3,>=1.22"), dist("jax-cuda12-plugin", "0.4.35"),
        python=(3, 11, 9),
    )
    f["pythons"]["interpreters"] = [{"minor": "3.10", "path": "/usr/bin/python3.10"}]
    plan = pin_with(f, "11.6", index_of(tmp_path, ("cupy-cuda11x", "13.3.0", "numpy<2.3,>=1.22")))
    rest = plan.steps[2].argv
    assert rest[4:] == (
        "torch==1.13.1+cu116", "numpy<2", "opencv-python>=4,<5", "pandas>=2,<3", "shapely>=1,<2",
        "--extra-index-url", "https://download.pytorch.org/whl/cu116",
    )
    assert "not carried, tied to another CUDA family: cupy-cuda12x 13.3.0 (cu12): for cu11 install cupy-cuda11x" in plan.notes
    assert "not carried, tied to another CUDA family: jax-cuda12-plugin 0.4.35 (cu12): no cu11 counterpart" in plan.notes


def test_without_a_fitting_interpreter_the_new_environment_is_conda():
    f = seed_facts(python=(3, 11, 9))
    f["pythons"] = {"interpreters": [{"minor": "3.12", "path": "/usr/bin/python3.12"}], "conda": "/opt/conda/bin/conda"}
    create = pin(f, "11.6").steps[0]
    assert create.argv == ("/opt/conda/bin/conda", "create", "-y", "-n", "torch-cu116", "python=3.10")


def test_without_interpreter_or_conda_the_plan_says_what_to_install():
    create = pin(seed_facts(python=(3, 11, 9)), "11.6").steps[0]
    assert create.argv[0] == "conda" and "install Miniconda first" in create.reason


# --- a table of pins across Pythons, against the release table (domain notes §2) -------------------

PIN_TABLE = [
    # cuda, python, torch (newest with that variant and Python), index flag
    ("10.2", (3, 9, 18), "1.12.1+cu102", "--extra-index-url"),
    ("11.7", (3, 10, 13), "2.0.1+cu117", "--index-url"),
    ("11.7", (3, 11, 9), "2.0.1+cu117", "--index-url"),
    ("11.8", (3, 8, 18), "2.4.1+cu118", "--index-url"),
    ("11.8", (3, 12, 4), "2.7.1+cu118", "--index-url"),
    ("12.1", (3, 8, 18), "2.4.1+cu121", "--index-url"),
    ("12.1", (3, 11, 9), "2.5.1+cu121", "--index-url"),
    ("12.1", (3, 13, 0), "2.5.1+cu121", "--index-url"),
    ("12.4", (3, 9, 18), "2.6.0+cu124", "--index-url"),
    ("12.6", (3, 9, 18), "2.8.0+cu126", "--index-url"),
    ("12.6", (3, 11, 9), "2.14.1+cu126", "--index-url"),
    ("12.8", (3, 9, 18), "2.8.0+cu128", "--index-url"),
    ("12.8", (3, 12, 4), "2.11.0+cu128", "--index-url"),
    ("13.0", (3, 10, 13), "2.14.1+cu130", "--index-url"),
    ("13.0", (3, 13, 0), "2.14.1+cu130", "--index-url"),
]


@pytest.mark.parametrize("cuda,python,torch,flag", PIN_TABLE)
def test_pin_table(cuda, python, torch, flag):
    plan = pin(seed_facts(python=python), cuda)
    tag = torch.split("+")[1]
    assert plan.applicable, plan.refusal
    assert install_step(plan).argv[4:] == (f"torch=={torch}", flag, f"https://download.pytorch.org/whl/{tag}")
    assert plan.expect.torch_version == torch


@pytest.mark.parametrize("cuda,python,new_torch", [("11.8", (3, 14, 0), "2.7.1"), ("12.6", (3, 8, 18), "2.14.1"), ("13.0", (3, 9, 18), "2.14.1")])
def test_pins_no_build_supports_are_planned_as_a_new_environment(cuda, python, new_torch):
    f = seed_facts(python=python)
    f["pythons"]["interpreters"] = [{"minor": m, "path": f"/usr/bin/python{m}"} for m in ("3.10", "3.12", "3.13")]
    plan = pin(f, cuda)
    assert plan.alternative and f"Python {python[0]}.{python[1]}" in plan.refusal
    assert plan.expect.torch_version.startswith(new_torch + "+")
    assert plan.steps[0].argv[0] in ("/usr/bin/python3.13", "/usr/bin/python3.12")


def test_pin_13_0_keeps_cu13_wheels_and_removes_cu12_and_cu11():
    f = seed_facts(dist("nvidia-cudnn-cu11", "8.5.0.96"), dist("nvidia-cublas", "13.0.0.19"), dist("cuda-toolkit", "13.0.2"), python=(3, 12, 4))
    plan = pin(f, "13.0", with_packages=("torchvision",))
    removed = plan.steps[0].argv[5:]
    assert "nvidia-cudnn-cu11" in removed and "nvidia-cublas-cu12" in removed
    assert "nvidia-cublas" not in removed and "cuda-toolkit" not in removed
    assert install_step(plan).argv[4:] == ("torch==2.14.1+cu130", "torchvision==0.29.1+cu130", "--index-url", "https://download.pytorch.org/whl/cu130")


def test_a_build_for_another_cuda_family_is_swapped_for_its_counterpart_in_place(tmp_path):
    f = seed_facts(dist("cupy-cuda12x", "13.3.0", "numpy<2.3,>=1.22"), dist("jax-cuda12-plugin", "0.4.35"))
    plan = pin_with(f, "11.6", index_of(tmp_path, ("cupy-cuda11x", "13.3.0", "numpy<2.3,>=1.22")))
    remove = plan.steps[0]
    assert remove.argv[-2:] == ("cupy-cuda12x", "jax-cuda12-plugin") and remove.summary.endswith("and the packages built for them: cupy-cuda12x, jax-cuda12-plugin")
    assert "cupy-cuda12x 13.3.0 (cu12): for cu11 install cupy-cuda11x" in remove.reason and "jax-cuda12-plugin 0.4.35 (cu12): no cu11 counterpart" in remove.reason
    assert install_step(plan).argv[4:6] == ("torch==1.13.1+cu116", "cupy-cuda11x>=13,<14")
    assert {"cupy-cuda12x", "jax-cuda12-plugin"} <= set(plan.expect.absent)


def test_torchaudio_without_a_release_goes_when_it_pins_the_old_torch_and_stays_otherwise():
    pinning = pin(seed_facts(dist("torchaudio", "2.3.1", "torch==2.3.1"), python=(3, 12, 4)), "13.0")
    assert "torchaudio" in pinning.steps[1].argv
    assert "no torchaudio was released for torch 2.14.1" in pinning.versions[0].why and pinning.versions[0].lost
    loose = pin(seed_facts(dist("torchaudio", "2.11.0"), python=(3, 12, 4)), "13.0")
    keep = [s for s in loose.steps if s.summary.startswith("Keep torchaudio")]
    assert keep and keep[0].status is StepStatus.SKIPPED and "no torchaudio was released for torch 2.14.1" in keep[0].reason


def test_named_torch_release():
    plan = pin(seed_facts(), "12.1", torch="2.3")
    assert install_step(plan).argv[4] == "torch==2.3.1+cu121"


@pytest.mark.parametrize("cuda,torch,message", [
    ("12.4", "2.3", "has no CUDA 12.4 build"),
    ("12.1", "2.3.0", "ask for 2.3.1"),
    ("12.1", "0.4", "not in the torch matrix"),
    ("9.9", None, "torch has wheels for CUDA"),
    ("cu121", None, "torch has wheels for CUDA"),
])
def test_bad_requests_are_usage_errors(cuda, torch, message):
    with pytest.raises(UsageError, match=message):
        pin(seed_facts(), cuda, torch=torch)


# --- driver and GPU ---------------------------------------------------------------------------------


def test_driver_470_refuses_pin_12_1_with_the_minimum_driver():
    plan = pin(seed_facts(driver="470.57.02"), "12.1")
    assert plan.blocked and not plan.applicable
    assert plan.refusal.startswith("driver 470.57.02 is too old for CUDA 12.1: it needs driver ≥ 525.60.13")


def test_force_plans_past_an_old_driver():
    plan = pin(seed_facts(driver="470.57.02"), "12.1", force=True)
    assert plan.applicable and any(n.startswith("--force: planned although driver 470.57.02") for n in plan.notes)


@pytest.mark.parametrize("driver,cuda,ok", [("470.57.02", "11.6", True), ("535.104.05", "12.6", True), ("535.104.05", "13.0", False), ("580.65.06", "13.0", True), ("450.51.05", "11.8", False)])
def test_driver_floors(driver, cuda, ok):
    plan = pin(seed_facts(driver=driver, python=(3, 10, 13)), cuda)
    assert (plan.refusal is None) is ok, plan.refusal


def test_gpu_without_kernels_in_the_build_is_refused():
    f = seed_facts(driver="580.65.06", python=(3, 12, 4))
    f["gpu"]["gpus"] = [{"index": 0, "name": "NVIDIA GeForce GTX 1080", "compute_capability": "6.1"}]
    plan = pin(f, "13.0")
    assert plan.blocked and plan.refusal.endswith("(compute capability 6.1) has no kernels in torch 2.14.1+cu130; torch 2.14.1 builds that have them: cu126")
    assert pin(f, "12.6").applicable


H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}


def test_h100_has_no_kernels_in_cu116_builds():
    f = seed_facts(driver="580.159.04")
    f["gpu"]["gpus"] = [H100]
    plan = pin(f, "11.6")
    assert plan.blocked
    assert plan.refusal == "NVIDIA H100 80GB HBM3 (compute capability 9.0) has no kernels in torch 1.13.1+cu116; no torch 1.13.1 build has them; builds of other releases that do: cu118, cu121, cu124, cu126, cu128, cu129, cu130, cu132"


def test_hardware_refusals_block_the_new_environment_too():
    f = seed_facts(python=(3, 12, 4), driver="580.159.04")
    f["gpu"]["gpus"] = [H100]
    f["pythons"]["interpreters"] = [{"minor": "3.10", "path": "/usr/bin/python3.10"}]
    plan = pin(f, "11.6")
    assert plan.blocked and not plan.alternative
    assert plan.refusal.startswith("NVIDIA H100 80GB HBM3 (compute capability 9.0) has no kernels in torch 1.13.1+cu116")
    assert plan.refusal.endswith("besides, no torch build for CUDA 11.6 supports Python 3.12 (torch 1.13.1 cu116 wheels need Python 3.7–3.10)")
    old_driver = pin(seed_facts(python=(3, 14, 0), driver="450.51.05"), "11.8")
    assert old_driver.blocked and old_driver.refusal.startswith("driver 450.51.05 is too old for CUDA 11.8: it needs driver ≥ 450.80.02")


V100 = {"index": 0, "name": "Tesla V100-SXM2-16GB", "compute_capability": "7.0"}
H200 = {"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0"}


def on_gpu(gpu: dict, driver: str, python=(3, 11, 9)) -> dict:
    return facts(python, [dist("torch", "2.11.0")], torch_version="2.11.0+cu130", torch_cuda="13.0", driver=driver, gpus=[gpu])


def test_the_release_is_the_newest_whose_build_has_kernels_for_the_gpu():
    # cu128 kept sm_70 through torch 2.10 and dropped it in 2.11 (domain notes §4)
    plan = pin(on_gpu(V100, "570.86.15"), "12.8")
    assert plan.applicable and plan.expect.torch_version == "2.10.0+cu128"
    assert install_step(plan).argv[4] == "torch==2.10.0+cu128"


def test_a_refused_pin_keeps_no_step_and_names_the_pins_that_run_here():
    plan = pin(on_gpu(H200, "580.65.06"), "11.6")
    assert plan.blocked and plan.steps == () and not plan.changes
    assert plan.instead == (
        "envdoctor fix --pin-cuda 11.8  (torch 2.7.1+cu118)",
        "envdoctor fix --pin-cuda 12.1  (torch 2.5.1+cu121)",
        "envdoctor fix --pin-cuda 12.4  (torch 2.6.0+cu124)",
    )
    shown = text(plan)
    assert "pip install" not in shown and "-m venv" not in shown and "What runs on this machine instead:" in shown
    assert not any(line.startswith("/") for line in sh(plan).splitlines())


def test_a_named_release_without_kernels_points_to_the_newest_that_has_them():
    plan = pin(on_gpu(V100, "570.86.15"), "12.8", torch="2.11")
    assert plan.blocked and plan.instead[0] == "envdoctor fix --pin-cuda 12.8 --torch 2.10.0  (torch 2.10.0+cu128)"


def test_alternatives_are_limited_by_the_driver():
    plan = pin(on_gpu(V100, "470.57.02", python=(3, 10, 13)), "12.8")
    assert plan.blocked and plan.instead and all("--pin-cuda 11." in line for line in plan.instead)


def test_a_build_for_the_same_cuda_says_how_to_keep_its_version():
    f = facts((3, 12, 4), [dist("torch", "2.11.0", "cuda-toolkit[cublas]==13.0.2"), dist("cuda-toolkit", "13.0.2")], torch_cuda="13.0", torch_version="2.11.0+cu130")
    plan = pin(f, "13.0")
    assert "torch 2.11.0+cu130 is already a cu130 build; `--torch 2.11.0` keeps its version" in plan.notes
    assert install_step(pin(f, "13.0", torch="2.11")).argv[4] == "torch==2.11.0+cu130"


# --- mixed wheels and threads -----------------------------------------------------------------------


def test_mixed_wheels_with_cpu_torch_drops_both_families():
    f = facts((3, 11, 9), [dist("torch", "2.13.0+cpu", "filelock"), dist("nvidia-cuda-runtime-cu11", "11.7.99"), dist("nvidia-cuda-runtime-cu12", "12.1.105")], torch_version="2.13.0+cpu")
    plan = plan_mixed_wheels(f, PIP)
    assert plan.steps[0].argv == (PY, "-m", "pip", "uninstall", "-y", "nvidia-cuda-runtime-cu11", "nvidia-cuda-runtime-cu12")
    assert plan.expect.families == () and plan.expect.torch_imports


def test_mixed_wheels_keeps_the_family_torch_needs():
    f = seed_facts(dist("nvidia-cudnn-cu11", "8.5.0.96"), dist("nvidia-cublas-cu11", "11.10.3.66"))
    plan = plan_mixed_wheels(f, PIP)
    assert plan.steps[0].argv[5:] == ("nvidia-cublas-cu11", "nvidia-cudnn-cu11")
    assert "cu12 (needed by torch)" in plan.steps[0].reason


def test_mixed_wheels_changes_nothing_when_both_families_are_required():
    f = seed_facts(dist("tensorflow", "2.14.0", "nvidia-cublas-cu11==11.11.3.6 ; extra == 'and-cuda'"), dist("nvidia-cublas-cu11", "11.11.3.6"))
    plan = plan_mixed_wheels(f, PIP)
    assert not plan.changes and "use separate environments" in plan.steps[0].reason and "tensorflow" in plan.steps[0].reason


def test_requirements_are_read_for_the_target_platform_not_the_doctors():
    f = facts((3, 11, 9), [
        dist("torch", "2.13.0+cpu"),
        dist("tensorflow", "2.14.0", 'nvidia-cublas-cu11==11.11.3.6 ; platform_system == "Linux"'),
        dist("nvidia-cublas-cu11", "11.11.3.6"), dist("nvidia-cuda-runtime-cu12", "12.1.105"),
    ], torch_version="2.13.0+cpu")
    assert plan_mixed_wheels(f, PIP).expect.families == ("cu11",)
    f["target"]["python"]["platform"] = "win32"
    assert plan_mixed_wheels(f, PIP).steps[0].argv[5:] == ("nvidia-cublas-cu11", "nvidia-cuda-runtime-cu12")


def test_mixed_wheels_with_one_family_has_nothing_to_do():
    assert not plan_mixed_wheels(seed_facts(), PIP).changes


def test_threads_exports_the_usable_cpus():
    f = {"cpu": {"usable_cpus": 4}, "environ": {"variables": {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "64", "NUMEXPR_NUM_THREADS": "32"}}}
    plan = plan_threads(f, PY)
    assert [(s.status, s.command) for s in plan.steps] == [
        (StepStatus.SKIPPED, ""),
        (StepStatus.PLANNED, "export MKL_NUM_THREADS=4"),
        (StepStatus.PLANNED, "export OPENBLAS_NUM_THREADS=4"),
        (StepStatus.PLANNED, "export NUMEXPR_NUM_THREADS=4"),
    ]
    assert not plan.changes


def test_plan_json_round_trip():
    plan = pin(seed_facts(dist("torchvision", "0.18.1", "torch==2.3.1")), "11.6")
    assert Plan.from_json(plan.to_json()) == plan
    moved = pin(seed_facts(dist("my-extension", "1.0", "torch==2.3.1")), "11.6")
    refused = pin(on_gpu(V100, "570.86.15"), "12.8", torch="2.11")
    assert moved.versions and refused.instead
    assert Plan.from_json(moved.to_json()) == moved and Plan.from_json(refused.to_json()) == refused


def test_release_metadata_reaches_a_plan_only_in_parsed_form(tmp_path):
    write_wheel(tmp_path / "wheels", "rl-zoo", "2.0", ["torch>=1.11"], ">=3.99")
    write_wheel(tmp_path / "wheels", "rl-zoo", "1.0", ["torch>=1.11"], ">=3.7\x1b[31m")  # unreadable: no bound, as pip reads it
    plan = pin_with(seed_facts(dist("rl-zoo", "3.1", "torch>=2.3")), "11.6", WheelFolder(tmp_path / "wheels"))
    assert [c.planned for c in plan.versions] == ["1.0"]  # 2.0 needs Python 3.99
    assert "\x1b" not in text(plan) + sh(plan) + str(plan.to_json())
