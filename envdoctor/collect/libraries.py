"""Library shadowing facts: CUDA, cuDNN and cuBLAS libraries the dynamic loader may find before the
copies inside torch's NVIDIA wheels, and the nvcc on PATH.

LD_PRELOAD beats everything; LD_LIBRARY_PATH beats a library's RUNPATH, through which the wheels'
libcublas finds libcublasLt and cuDNN finds its sub-libraries (pytorch#91067, #104808, #121222);
the linker cache answers every bare-soname dlopen the wheels cannot (pytorch#188892). Read from
directories and the binary /etc/ld.so.cache, without loading anything.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Iterable, List, Mapping, Optional

from envdoctor import host
from envdoctor.knowledge import wheels
from envdoctor.proc.children import run_child

LDCONFIG_CACHE = "/etc/ld.so.cache"
NVCC_TIMEOUT_S = 10.0


def library_pattern() -> "re.Pattern[str]":
    """libcudart.so.12, libcudnn_graph.so.9.1.0, ...: every library the NVIDIA wheels ship, cuDNN's sub-libraries included."""
    names = sorted({lib for libs in wheels.projects().values() for lib in libs}, key=len, reverse=True)
    alternatives = "|".join(re.escape(n) + (r"(?:_[a-z_]+)?" if n == "libcudnn" else "") for n in names)
    return re.compile(rf"^({alternatives})\.so\.(\d+)((?:\.\d+)*)$")


def describe(path: str, via: str, pattern) -> Optional[dict]:
    """A library's name, soname major and full version (read from the file its soname link points to)."""
    match = pattern.match(os.path.basename(path))
    if not match:
        return None
    real = pattern.match(os.path.basename(os.path.realpath(path)))
    version = f"{real.group(2)}{real.group(3)}" if real and real.group(1) == match.group(1) else f"{match.group(2)}{match.group(3)}"
    return {"via": via, "path": path, "library": match.group(1), "major": int(match.group(2)), "version": version}


def one_per_soname(found: Iterable[dict]) -> List[dict]:
    """libcudnn.so.8 and libcudnn.so.8.9.2 are one library: keep the first of each folder and soname."""
    seen, kept = set(), []
    for entry in found:
        key = (os.path.dirname(entry["path"]), entry["library"], entry["major"])
        if key not in seen:
            seen.add(key)
            kept.append(entry)
    return kept


def in_directory(directory: str, via: str, pattern) -> List[dict]:
    try:
        names = sorted(os.listdir(directory), key=lambda n: (len(n), n))
    except OSError:
        return []
    return [d for d in (describe(os.path.join(directory, n), via, pattern) for n in names) if d]


def preloaded(environ: Mapping[str, str], pattern) -> List[dict]:
    entries = re.split(r"[:\s]+", environ.get("LD_PRELOAD", ""))
    return [d for d in (describe(e, "LD_PRELOAD", pattern) for e in entries if e) if d]


def library_path(environ: Mapping[str, str], pattern) -> List[dict]:
    directories = [d for d in environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    return [entry for d in directories for entry in in_directory(d, "LD_LIBRARY_PATH", pattern)]


def cache_paths(data: bytes) -> List[str]:
    """Absolute library paths in a glibc ld.so.cache: its string table holds them NUL-terminated."""
    return [s.decode("utf-8", "replace") for s in re.findall(rb"/[\x21-\x7e]+?\.so[\x21-\x7e]*(?=\x00)", data)]


def linker_cache(pattern) -> List[dict]:
    try:
        data = host.path(LDCONFIG_CACHE).read_bytes()
    except OSError:
        return []
    found = []
    for path in sorted(set(cache_paths(data))):
        entry = describe(str(host.path(path)), "ldconfig", pattern)
        if entry:
            found.append({**entry, "path": path})
    return found


def nvcc(environ: Mapping[str, str]) -> Optional[dict]:
    """nvcc on PATH and the CUDA release it reports ("Cuda compilation tools, release 13.0, V13.0.88")."""
    path = shutil.which("nvcc", path=environ.get("PATH", ""))
    if path is None:
        return None
    result = run_child([path, "--version"], timeout=NVCC_TIMEOUT_S)
    match = re.search(r"release (\d+\.\d+), V([\d.]+)", result.stdout)
    return {
        "path": path,
        "version": match.group(1) if match else None,
        "full_version": match.group(2) if match else None,
        "error": None if match else result.describe(),
    }


def collect(ctx) -> dict:
    pattern = library_pattern()
    return {
        "ld_preload": preloaded(ctx.environ, pattern),
        "ld_library_path": one_per_soname(library_path(ctx.environ, pattern)),
        "ldconfig": one_per_soname(linker_cache(pattern)),
        "nvcc": nvcc(ctx.environ),
    }
