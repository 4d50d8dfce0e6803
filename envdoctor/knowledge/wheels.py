"""NVIDIA CUDA pip wheels: which CUDA family a distribution belongs to, and which libraries it ships
(nvidia_wheels.csv).

cu11 and cu12 wheels carry a `-cu11`/`-cu12` suffix; CUDA 13 publishes the toolkit libraries
unsuffixed (`nvidia-cublas`) and pulls them through the `cuda-toolkit` meta package, while cuDNN,
NCCL, cuSPARSELt and NVSHMEM stay suffixed (`nvidia-cudnn-cu13`). Names such as `nvidia-ml-py`
are not CUDA libraries and belong to no family.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, Optional, Tuple

from packaging.utils import canonicalize_name as normalize

from envdoctor.knowledge import rows, words

SUFFIX = re.compile(r"^(nvidia-.+)-cu(\d+)$")
TOOLKIT_META = "cuda-toolkit"
UNSUFFIXED_FAMILY = "cu13"


@lru_cache(maxsize=None)
def projects() -> Dict[str, Tuple[str, ...]]:
    """Base project name (without -cuNN) -> the shared libraries it ships."""
    return {row["project"]: words(row["libraries"]) for row in rows("nvidia_wheels.csv")}


@lru_cache(maxsize=None)
def unsuffixed_projects() -> Tuple[str, ...]:
    return tuple(row["project"] for row in rows("nvidia_wheels.csv") if row["cu13_unsuffixed"] == "yes")


def family_of_major(major: str) -> str:
    """ "12" -> "cu12"; the pre-2022 names such as `-cu117` carry major and minor."""
    return "cu" + (major[:2] if len(major) > 2 else major)


def cuda_family(distribution_name: str, version: Optional[str] = None) -> Optional[str]:
    """The CUDA family ("cu11", "cu12", "cu13") of an NVIDIA wheel, None for anything else.

    `cuda-toolkit` is classified by its version when given (12.x meta packages exist too), else as cu13.
    """
    name = normalize(distribution_name)
    suffixed = SUFFIX.match(name)
    if suffixed:
        return family_of_major(suffixed.group(2))
    if name in unsuffixed_projects():
        return UNSUFFIXED_FAMILY
    if name == TOOLKIT_META:
        major = (version or "").split(".", 1)[0]
        return family_of_major(major) if major.isdigit() else UNSUFFIXED_FAMILY
    return None


def project_of(distribution_name: str) -> str:
    """ "nvidia-cudnn-cu12" -> "nvidia-cudnn": the library a wheel carries, whatever its family."""
    name = normalize(distribution_name)
    suffixed = SUFFIX.match(name)
    return suffixed.group(1) if suffixed else name


def libraries_of(distribution_name: str) -> Tuple[str, ...]:
    """The shared libraries (without .so) the wheel ships, e.g. ("libcublas", "libcublasLt")."""
    return projects().get(project_of(distribution_name), ())


def soname_major(distribution_name: str, version: str) -> Optional[int]:
    """The soname major of the wheel's libraries: fixed for a few (libcufile.so.0), else the wheel's major."""
    row = next((r for r in rows("nvidia_wheels.csv") if r["project"] == project_of(distribution_name)), None)
    if row is None:
        return None
    major = row["soname_major"] or version.split(".", 1)[0]
    return int(major) if major.isdigit() else None


def torch_family(torch_cuda: Optional[str]) -> Optional[str]:
    """ "12.1" -> "cu12"; None (a CPU build) -> None."""
    if not torch_cuda:
        return None
    major = torch_cuda.split(".", 1)[0]
    return family_of_major(major) if major.isdigit() else None
