"""Conda knowledge: PyTorch's conda builds and the install command of each era (conda_torch.csv), and
the GCC whose libstdc++ first provides a GLIBCXX_ version (glibcxx.csv).

Since torch 1.13 a conda build is chosen with `pytorch-cuda=X.Y` from the nvidia channel; before, with
`cudatoolkit=X.Y` (pytorch.github.io previous-versions.md). torchvision and torchaudio come in the
same command at the versions the torch matrix pairs with the release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from envdoctor.knowledge import minor_of, rows, version_tuple, words
from envdoctor.knowledge.torch_matrix import find


@dataclass(frozen=True)
class CondaBuild:
    """One conda install of one torch release for one CUDA version."""

    torch: str
    cuda: str
    cuda_package: str
    channels: Tuple[str, ...]
    source: str


def builds() -> Tuple[CondaBuild, ...]:
    """Every known conda build, oldest torch first."""
    found = [CondaBuild(r["torch"], r["cuda"], r["cuda_package"], words(r["channels"]), r["source"]) for r in rows("conda_torch.csv")]
    return tuple(sorted(found, key=lambda b: (version_tuple(b.torch), version_tuple(b.cuda))))


def builds_for(cuda: str, python_minor: str) -> List[CondaBuild]:
    """The conda builds for CUDA `cuda` of the releases that support Python `python_minor`, oldest first."""
    fitting = []
    for build in builds():
        release = find(build.torch)
        if build.cuda == minor_of(cuda) and release is not None and python_minor in release.python:
            fitting.append(build)
    return fitting


def install_args(build: CondaBuild, companions: Sequence[str]) -> List[str]:
    """`conda install` arguments: pytorch and the companions pinned, the CUDA package, the channels."""
    release = find(build.torch)
    pins = [f"pytorch=={build.torch}"] + [f"{name}=={release.companion(name)}" for name in companions if release and release.companion(name)]
    channels = [arg for channel in build.channels for arg in ("-c", channel)]
    return [*pins, f"{build.cuda_package}={build.cuda}", *channels]


def gcc_providing(glibcxx: str) -> Optional[str]:
    """The first GCC whose libstdc++ defines GLIBCXX_`glibcxx` ("3.4.30" -> "12.1"); None when unknown."""
    wanted = version_tuple(glibcxx)
    known = sorted(rows("glibcxx.csv"), key=lambda r: version_tuple(r["glibcxx"]))
    return next((r["gcc"] for r in known if version_tuple(r["glibcxx"]) >= wanted), None)
