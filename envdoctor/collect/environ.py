"""Environment variables that change how the stack behaves, secrets recorded by name only.

Taken before anything imports threadpoolctl: importing it sets KMP_DUPLICATE_LIB_OK as a side effect.
"""

from __future__ import annotations

import re

from envdoctor.redact import REDACTED, is_secret_name

RELEVANT = re.compile(
    r"^(OMP_|MKL_|OPENBLAS_|GOTO_|BLIS_|NUMEXPR_|VECLIB_|KMP_|GOMP_|CUDA_|CUDNN_|NVIDIA_|NCCL_|TORCH_|"
    r"PYTORCH_|ATEN_|PYTHON|LD_LIBRARY_PATH$|LD_PRELOAD$|DYLD_|CONDA_PREFIX$|CONDA_DEFAULT_ENV$|"
    r"VIRTUAL_ENV$|WSL_|XLA_|TF_|JAX_|MUJOCO_|SDL_|DISPLAY$|PATH$|"
    r"MASTER_ADDR$|MASTER_PORT$|WORLD_SIZE$|LOCAL_WORLD_SIZE$|RANK$|LOCAL_RANK$|NODE_RANK$|GLOO_)"
)


def relevant_variables(environ) -> dict:
    """The variables that matter to a native ML stack; a secret-looking one only by name."""
    return {
        name: (REDACTED if is_secret_name(name) else value)
        for name, value in sorted(environ.items())
        if RELEVANT.match(name)
    }


def collect(ctx) -> dict:
    return {"variables": relevant_variables(ctx.environ)}
