"""Facts about the diagnosed interpreter, gathered by running a stdlib-only script under it.

The script's answer travels on its own channel, a private temporary file named to it in the environment,
not on stdout: whatever the interpreter prints as it starts (a .pth file, a sitecustomize, a banner) or
prints while the script runs cannot make its facts unreadable. The answer is the file's last line.
"""

from __future__ import annotations

import json
import os
import tempfile

from envdoctor.collect.elf import cxx_runtime
from envdoctor.collect.fatbin import torch_kernels
from envdoctor.collect.numpy_builds import numpy_builds
from envdoctor.proc import run_child
from envdoctor.target import script_source

TIMEOUT_S = 60.0
RESULT_VARIABLE = "ENVDOCTOR_RESULT"
MAX_RESULT_BYTES = 256 * 2**20
# Run before the script: its stdout becomes the result file, and the variable is gone before anything it starts.
RESULT_CHANNEL = (
    "import os as _envdoctor_os, sys as _envdoctor_sys; "
    f"_envdoctor_sys.stdout = open(_envdoctor_os.environ.pop({RESULT_VARIABLE!r}), 'w', encoding='utf-8')\n"
)


class CollectorError(Exception):
    """A collector could not gather its facts; recorded as the collector's `error` fact."""


def run_target_script(python: str, name: str, *args: str, timeout: float = TIMEOUT_S, env=None) -> dict:
    """Run target/<name>.py under `python` and return the JSON it wrote on its result channel.

    The source goes through `-c` so the script's folder never lands on the target's sys.path.
    """
    handle, path = tempfile.mkstemp(prefix="envdoctor-result-")
    os.close(handle)
    try:
        environ = {**(os.environ if env is None else env), RESULT_VARIABLE: path}
        result = run_child([python, "-c", RESULT_CHANNEL + script_source(name), *args], timeout=timeout, env=environ)
        if not result.ok:
            tail = result.stderr.strip().splitlines()[-1:] or [""]
            raise CollectorError(f"{name} under {python} {result.describe()} {tail[0]}".strip())
        return read_result(path, f"{name} under {python}")
    finally:
        os.unlink(path)


def read_result(path: str, who: str) -> dict:
    with open(path, "rb") as stream:
        data = stream.read(MAX_RESULT_BYTES + 1)
    if len(data) > MAX_RESULT_BYTES:
        raise CollectorError(f"{who} wrote more than {MAX_RESULT_BYTES // 2**20} MiB of facts")
    last = data.decode("utf-8", "replace").rstrip("\n").rsplit("\n", 1)[-1]
    try:
        found = json.loads(last)
    except ValueError as error:
        raise CollectorError(f"{who} wrote no JSON facts ({error})") from None
    if not isinstance(found, dict):
        raise CollectorError(f"{who} wrote {type(found).__name__} where its facts belong")
    return found


def site_folders(facts: dict, prefix: str) -> list:
    """The environment's own site-packages folders on the interpreter's path."""
    paths = facts.get("python", {}).get("sys_path", ())
    return [p for p in paths if p.startswith(prefix.rstrip("/") + "/") and p.rstrip("/").endswith("site-packages")]


def conda(ctx, facts: dict) -> dict:
    """The conda records and activation (target/conda.py) and, in a conda environment, its C++ runtime
    read from the ELF files on disk."""
    found = run_target_script(ctx.python, "conda", env=ctx.environ)
    prefix = found.get("prefix")
    if prefix:
        python = facts.get("python", {}).get("executable") or ctx.python
        found["cxx_runtime"] = cxx_runtime(prefix, python, site_folders(facts, prefix), ctx.environ)
    return found


def installed_torch_kernels(facts: dict):
    """The GPU kernels the installed CUDA torch ships, read from its libraries' fatbins (collect/fatbin.py);
    None for a CPU or ROCm build."""
    build = facts.get("torch_build") or {}
    dist = next((d for d in facts.get("distributions") or () if isinstance(d, dict) and d.get("name") == "torch"), None)
    if not isinstance(build, dict) or not build.get("cuda") or dist is None or not isinstance(dist.get("location"), str):
        return None
    return torch_kernels(dist["location"])


def collect(ctx) -> dict:
    facts = run_target_script(ctx.python, "facts", env=ctx.environ)
    facts["torch_kernels"] = installed_torch_kernels(facts)
    facts["numpy_builds"] = numpy_builds(facts.get("distributions") or ())
    try:
        facts["conda"] = conda(ctx, facts)
    except CollectorError as error:
        facts["conda"] = {"error": str(error)}
    return facts
