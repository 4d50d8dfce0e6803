"""The torch <-> torchvision <-> torchaudio <-> Python <-> CUDA-variant matrix (torch_matrix.csv),
and the pip command form of each era.

torchvision and torchaudio must match torch's minor exactly ("undefined symbol" otherwise), and the
install form changed with torch 2.0: 1.x wheels came from `--extra-index-url` beside PyPI, 2.x ones
from `--index-url` alone (pytorch.github.io previous-versions.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from envdoctor.knowledge import minor_of, optional, rows, version_tuple, words

INDEX_ROOT = "https://download.pytorch.org/whl"
CPU = "cpu"


@dataclass(frozen=True)
class TorchRelease:
    """The newest patch of one torch minor and what goes with it."""

    torch: str
    torchvision: str
    torchaudio: Optional[str]
    python: Tuple[str, ...]
    cuda: Tuple[str, ...]
    pypi_default_cuda: Optional[str]
    source: str

    def companion(self, package: str) -> Optional[str]:
        """The version of `package` (torch, torchvision or torchaudio) that belongs to this release."""
        return {"torch": self.torch, "torchvision": self.torchvision, "torchaudio": self.torchaudio}.get(package)


def releases() -> Tuple[TorchRelease, ...]:
    """Every known release, oldest first."""
    found = [
        TorchRelease(
            torch=row["torch"],
            torchvision=row["torchvision"],
            torchaudio=optional(row["torchaudio"]),
            python=words(row["python"]),
            cuda=words(row["cuda"]),
            pypi_default_cuda=optional(row["pypi_default_cuda"]),
            source=row["source"],
        )
        for row in rows("torch_matrix.csv")
    ]
    return tuple(sorted(found, key=lambda r: version_tuple(r.torch)))


def find(torch_version: str) -> Optional[TorchRelease]:
    """The release of torch "2.3.1", "2.3.1+cu121" or "2.3" (matched by minor); None when unknown."""
    wanted = minor_of(torch_version)
    return next((r for r in releases() if minor_of(r.torch) == wanted), None)


def variant_tag(cuda: str) -> str:
    """ "11.6" -> "cu116", "13.0" -> "cu130" (test-infra translate_desired_cuda); "cpu" stays "cpu"."""
    if cuda == CPU:
        return CPU
    return "cu" + minor_of(cuda).replace(".", "")


def index_url(cuda: str) -> str:
    return f"{INDEX_ROOT}/{variant_tag(cuda)}"


def install_args(release: TorchRelease, cuda: str, packages: Sequence[str]) -> List[str]:
    """pip arguments installing `packages` of `release` built for `cuda` ("12.6" or "cpu").

    Every package of that index carries the local suffix (+cu126); a package the release has no
    version of (torchaudio after 2.11) is left out.
    """
    if cuda != CPU and minor_of(cuda) not in release.cuda:
        raise ValueError(f"torch {release.torch} has no CUDA {cuda} build (it has {', '.join(release.cuda)})")
    tag = variant_tag(cuda)
    pins = [f"{name}=={release.companion(name)}+{tag}" for name in packages if release.companion(name)]
    flag = "--extra-index-url" if version_tuple(release.torch) < (2,) else "--index-url"
    return [*pins, flag, index_url(cuda)]
