"""Conda facts about the interpreter this script runs under, printed as one JSON document.

Stdlib only, Python 3.8 syntax. A conda environment is a prefix with a conda-meta/ folder; conda,
mamba and micromamba write one JSON record per installed package there (conda's PrefixRecord,
conda/conda conda/models/records.py: name, version, build, build_number, channel, subdir, fn, url,
depends, files, paths_data, requested_spec, link). Records are bounded in count and bytes: pytorch's
record lists thousands of files, and the report keeps only what the checks judge: the shared
libraries of the CUDA, BLAS/OpenMP and C++-runtime packages and the Python distributions each
package put in site-packages.
"""

import errno
import json
import os
import re
import shutil
import stat
import sys

MAX_RECORDS = 3000
MAX_RECORD_BYTES = 64 * 2 ** 20
MAX_TOTAL_BYTES = 512 * 2 ** 20
MAX_LIBRARIES = 128
MAX_DEPENDS = 64
MAX_BUNDLED_FOLDERS = 200
# Packages whose shared libraries and dependencies the checks read: CUDA, BLAS/OpenMP, the C++ runtime, torch.
DETAILED = re.compile(
    r"^(cudatoolkit|cudnn|nccl|pytorch|pytorch-cuda|pytorch-gpu|libtorch|magma.*|cuda-.+|libcu.+|libnv.+|libnpp.*"
    r"|mkl.*|intel-openmp|llvm-openmp|libgomp|_openmp_mutex|openblas|libopenblas|blas|libblas|libcblas|nomkl"
    r"|libstdcxx.*|libgcc.*)$"
)
LIBRARY = re.compile(r"^lib/([^/]+\.so(\.[0-9]+)*)$")
PYTHON_DIST = re.compile(r"^(.*site-packages/[^/]+\.(dist-info|egg-info))(/|$)")
RUNTIME = re.compile(r"^(libgomp|libiomp5|libomp|libopenblas|libmkl_[a-z_]+|libgfortran)[-.]")
MANAGERS = ("conda", "mamba", "micromamba")


def open_regular(path):
    """`path` opened for reading in binary if it is a regular file, OSError otherwise: a FIFO would
    block the open until a writer comes, a device would never end (the doctor's envdoctor/files.py
    does the same; this script cannot import it)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return os.fdopen(descriptor, "rb")


def channel_name(channel):
    """ "https://conda.anaconda.org/conda-forge/linux-64" -> "conda-forge"; a bare name stays as it is."""
    text = str(channel or "").rstrip("/")
    if "://" not in text:
        return text
    path = text.split("://", 1)[1].split("/", 1)[-1]
    parts = [p for p in path.split("/") if p]
    if parts and re.match(r"^(noarch|linux|osx|win)(-.*)?$", parts[-1]):
        parts = parts[:-1]
    if parts and parts[0] == "t" and len(parts) > 2:  # token URLs: /t/<token>/<channel>
        parts = parts[2:]
    return "/".join(parts)


def libraries_of(files):
    found = []
    for path in files:
        match = LIBRARY.match(path) if isinstance(path, str) else None
        if match and match.group(1) not in found:
            found.append(match.group(1))
            if len(found) >= MAX_LIBRARIES:
                break
    return found


def python_dists_of(files):
    found = []
    for path in files:
        match = PYTHON_DIST.match(path) if isinstance(path, str) else None
        if match and match.group(1) not in found:
            found.append(match.group(1))
    return found


def summary(data):
    """The facts kept of one record: who it is, where from, and what the checks read of its files."""
    files = data.get("files") if isinstance(data.get("files"), list) else []
    name = str(data.get("name", ""))
    record = {
        "name": name,
        "version": str(data.get("version", "")),
        "build": str(data.get("build", data.get("build_string", ""))),
        "channel": channel_name(data.get("channel") or data.get("schannel") or data.get("url") or ""),
        "python_dists": python_dists_of(files),
    }
    if DETAILED.match(name):
        depends = data.get("depends") if isinstance(data.get("depends"), list) else []
        record["libraries"] = libraries_of(files)
        record["depends"] = [str(d) for d in depends[:MAX_DEPENDS]]
    return record


def read_record(path, size):
    with open_regular(path) as stream:
        data = json.loads(stream.read(size).decode("utf-8", "replace"))
    if not isinstance(data, dict) or not data.get("name"):
        raise ValueError("not a package record")
    return summary(data)


def read_records(prefix):
    """The package records of conda-meta/, bounded in count and bytes, with what was left unread."""
    meta = os.path.join(prefix, "conda-meta")
    try:
        names = sorted(n for n in os.listdir(meta) if n.endswith(".json"))
    except OSError as error:
        return {"records": [], "records_total": 0, "unread": [], "truncated": "conda-meta unreadable: %s" % error}
    records, unread, total, truncated = [], [], 0, None
    for name in names:
        if len(records) + len(unread) >= MAX_RECORDS:
            truncated = "read %d of %d records (at most %d)" % (len(records), len(names), MAX_RECORDS)
            break
        path = os.path.join(meta, name)
        try:
            size = os.path.getsize(path)
            if size > MAX_RECORD_BYTES:
                unread.append({"file": name, "reason": "%d bytes, above %d" % (size, MAX_RECORD_BYTES)})
                continue
            if total + size > MAX_TOTAL_BYTES:
                truncated = "read %d of %d records (at most %d bytes in all)" % (len(records), len(names), MAX_TOTAL_BYTES)
                break
            total += size
            records.append(read_record(path, size))
        except (OSError, ValueError) as error:
            unread.append({"file": name, "reason": "%s: %s" % (type(error).__name__, error)})
    return {"records": records, "records_total": len(names), "unread": unread, "truncated": truncated}


def root_of(prefix):
    """The installation an environment belongs to: <root>/envs/<name> -> <root>; a prefix that is itself
    an installation (it has condabin/ or bin/conda) is its own root."""
    parent = os.path.dirname(prefix)
    if os.path.basename(parent) == "envs" and os.path.isdir(os.path.join(os.path.dirname(parent), "conda-meta")):
        return os.path.dirname(parent)
    if os.path.isdir(os.path.join(prefix, "condabin")) or os.path.isfile(os.path.join(prefix, "bin", "conda")):
        return prefix
    return None


def manager_kind(path):
    base = os.path.basename(path)
    return next((kind for kind in reversed(MANAGERS) if base.startswith(kind)), "conda")


def executable(path):
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def manager_candidates(root):
    """Where the conda/mamba/micromamba that manages the environment may be, in order of trust."""
    candidates = []
    if root:
        candidates += [(os.path.join(root, "bin", kind), "root") for kind in ("conda", "mamba")]
        candidates.append((os.path.join(root, "condabin", "conda"), "root"))
    candidates += [(os.environ.get("CONDA_EXE", ""), "CONDA_EXE"), (os.environ.get("MAMBA_EXE", ""), "MAMBA_EXE")]
    candidates += [(shutil.which(kind) or "", "PATH") for kind in MANAGERS]
    return candidates


def manager(root):
    for path, via in manager_candidates(root):
        if executable(path):
            return {"path": path, "kind": manager_kind(path), "via": via}
    return None


def same_path(a, b):
    try:
        return bool(a) and bool(b) and os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False


def same_folder(a, b):
    """Whether two interpreters sit in one bin/ folder: a venv's python and its base interpreter
    resolve to the same file, yet are different environments."""
    return bool(a) and bool(b) and same_path(os.path.dirname(a), os.path.dirname(b))


def activation():
    """Which environment this shell has active, and whether `python` on PATH is this interpreter."""
    active = os.environ.get("CONDA_PREFIX") or None
    on_path = shutil.which("python")
    return {
        "prefix": active,
        "name": os.environ.get("CONDA_DEFAULT_ENV") or None,
        "shlvl": os.environ.get("CONDA_SHLVL") or None,
        "this_env": same_path(active, sys.prefix) if active else False,
        "python_on_path": on_path,
        "python_on_path_is_this": same_folder(on_path, sys.executable),
    }


def bundled_runtimes(prefix):
    """OpenMP/BLAS libraries that pip wheels vendor (<pkg>.libs/ by auditwheel, torch/lib/) in this
    environment's site-packages: the runtimes pip brings beside conda's."""
    found = []
    for site in (p for p in sys.path if p.startswith(prefix) and p.endswith("site-packages")):
        try:
            entries = sorted(os.listdir(site))
        except OSError:
            continue
        folders = [e for e in entries if e.endswith(".libs")] + ["torch/lib"]
        for folder in folders[:MAX_BUNDLED_FOLDERS]:
            try:
                names = sorted(n for n in os.listdir(os.path.join(site, folder)) if RUNTIME.match(n))
            except OSError:
                continue
            if names:
                found.append({"folder": os.path.join(site, folder), "libraries": names[:MAX_LIBRARIES]})
    return found


def activation_scripts(prefix):
    """The scripts `conda activate` runs for this environment (etc/conda/activate.d): what is missing when it is not active."""
    try:
        return sorted(os.listdir(os.path.join(prefix, "etc", "conda", "activate.d")))[:MAX_LIBRARIES]
    except OSError:
        return []


def conda_facts():
    facts = {"prefix": None, "active": activation()}
    prefix = sys.prefix
    if not os.path.isdir(os.path.join(prefix, "conda-meta")):
        return facts
    root = root_of(prefix)
    facts.update(read_records(prefix))
    facts.update({
        "prefix": prefix,
        "root": root,
        "name": "base" if root == prefix else os.path.basename(prefix),
        "manager": manager(root),
        "activation_scripts": activation_scripts(prefix),
        "bundled_runtimes": bundled_runtimes(prefix),
    })
    return facts


if __name__ == "__main__":
    sys.stdout.write(json.dumps(conda_facts()))
