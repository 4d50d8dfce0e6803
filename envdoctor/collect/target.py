"""Facts about the diagnosed interpreter, gathered by running a stdlib-only script under it."""

from __future__ import annotations

import json

from envdoctor.collect.elf import cxx_runtime
from envdoctor.collect.fatbin import torch_kernels
from envdoctor.proc import run_child
from envdoctor.target import script_source

TIMEOUT_S = 60.0


class CollectorError(Exception):
    """A collector could not gather its facts; recorded as the collector's `error` fact."""


def run_target_script(python: str, name: str, *args: str, timeout: float = TIMEOUT_S, env=None) -> dict:
    """Run target/<name>.py under `python` and return the JSON it printed.

    The source goes through `-c` so the script's folder never lands on the target's sys.path.
    """
    source = script_source(name)
    result = run_child([python, "-c", source, *args], timeout=timeout, env=env)
    if not result.ok:
        tail = result.stderr.strip().splitlines()[-1:] or [""]
        raise CollectorError(f"{name} under {python} {result.describe()} {tail[0]}".strip())
    try:
        return json.loads(result.stdout)
    except ValueError as error:
        raise CollectorError(f"{name} under {python} printed no JSON ({error})") from None


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
    try:
        facts["conda"] = conda(ctx, facts)
    except CollectorError as error:
        facts["conda"] = {"error": str(error)}
    return facts
