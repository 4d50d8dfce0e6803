"""The site's checks, registered with envdoctor when it loads the `envdoctor.checks` entry point.

The rules that need a setting (the driver branch, the torch build, the checkpoint folder) are
registered only when the site gives it, so `envdoctor checks` lists exactly what this site enforces.
"""

from __future__ import annotations

from functools import partial

from envdoctor.checks import check
from envdoctor_site_checks import rules
from envdoctor_site_checks.settings import load_settings

SETTINGS = load_settings()

check("site.distributed-env", "A multi-node job (WORLD_SIZE > 1) has MASTER_ADDR, MASTER_PORT and NCCL_SOCKET_IFNAME", requires=("environ",))(rules.distributed_env)

if SETTINGS.forbidden_env:
    check("site.forbidden-env", f"Production jobs do not set {', '.join(SETTINGS.forbidden_env)}", requires=("environ",))(
        partial(rules.forbidden_env, forbidden=SETTINGS.forbidden_env)
    )

if SETTINGS.min_driver_branch is not None:
    check("site.driver-branch", f"NVIDIA driver branch {SETTINGS.min_driver_branch} or newer", requires=("gpu",))(
        partial(rules.driver_branch, minimum=SETTINGS.min_driver_branch)
    )

if SETTINGS.torch_build is not None:
    check("site.torch-build", f"torch is the team's build {SETTINGS.torch_build}", requires=("target",))(
        partial(rules.torch_standard, wanted=SETTINGS.torch_build)
    )

if SETTINGS.checkpoint_dir is not None:
    check("site.checkpoint-disk", f"At least {SETTINGS.checkpoint_free_gb:g} GiB free in {SETTINGS.checkpoint_dir}", requires=("disk",))(
        partial(rules.checkpoint_space, folder=SETTINGS.checkpoint_dir, minimum_gb=SETTINGS.checkpoint_free_gb)
    )
