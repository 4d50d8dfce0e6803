"""Facts about the diagnosed interpreter, gathered by running a stdlib-only script under it.

The script's answer travels on its own channel, a private temporary file named to it in the environment,
not on stdout: whatever the interpreter prints as it starts (a .pth file, a sitecustomize, a banner) or
prints while the script runs cannot make its facts unreadable. The answer is the file's last line.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import List, NamedTuple, Sequence, Tuple, Union

from envdoctor.collect.elf import cxx_runtime
from envdoctor.collect.fatbin import torch_kernels
from envdoctor.collect.numpy_builds import numpy_builds
from envdoctor.collect.startup import pth_errors
from envdoctor.proc.children import NO_BYTECODE, run_child
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
    who = f"{name} under {python}"
    return parsed(who, result_of(who, python, [script_source(name), *args], timeout, env).written)


class Answer(NamedTuple):
    """What a target script wrote on its result channel, and what the interpreter said on stderr."""

    written: str
    stderr: str


def result_of(who: str, python: str, argv: Sequence[str], timeout: float, env) -> Answer:
    """Run `python -c SOURCE ARGS...` with its stdout turned into a private result file, and return what
    the script wrote there; a child that did not end well is a CollectorError with its last stderr line."""
    handle, path = tempfile.mkstemp(prefix="envdoctor-result-")
    os.close(handle)
    try:
        environ = {**(os.environ if env is None else env), RESULT_VARIABLE: path}
        source, *args = argv
        result = run_child([python, NO_BYTECODE, "-c", RESULT_CHANNEL + source, *args], timeout=timeout, env=environ)
        written = read_bounded(path, who)
    finally:
        os.unlink(path)
    if not result.ok and "\0" not in written:
        tail = result.stderr.strip().splitlines()[-1:] or [""]
        raise CollectorError(f"{who} {result.describe()} {tail[0]}".strip())
    return Answer(written, result.stderr)


def read_bounded(path: str, who: str) -> str:
    with open(path, "rb") as stream:
        data = stream.read(MAX_RESULT_BYTES + 1)
    if len(data) > MAX_RESULT_BYTES:
        raise CollectorError(f"{who} wrote more than {MAX_RESULT_BYTES // 2**20} MiB of facts")
    return data.decode("utf-8", "replace")


def parsed(who: str, written: str) -> dict:
    """The facts a script wrote: its last line, as JSON (anything it printed before is noise)."""
    last = written.rstrip("\n").rsplit("\n", 1)[-1]
    try:
        found = json.loads(last)
    except ValueError as error:
        raise CollectorError(f"{who} wrote no JSON facts ({error})") from None
    if not isinstance(found, dict):
        raise CollectorError(f"{who} wrote {type(found).__name__} where its facts belong")
    return found


def run_target_scripts(python: str, names: Sequence[str], timeout: float = TIMEOUT_S, env=None) -> Tuple[List[Union[dict, CollectorError]], str]:
    """Run the argument-less target scripts `names` under `python` in one start of it (target/batch.py)
    and return, for each, the JSON it wrote or the CollectorError that says why there is none, and
    what the interpreter wrote on stderr. A script the child did not finish (it failed to start, or
    died or ran out of time in that script) has the child's end as its error."""
    try:
        answer = result_of(python, python, [script_source("batch"), *(script_source(name) for name in names)], timeout, env)
    except CollectorError as error:
        return [CollectorError(f"{name} under {error}") for name in names], ""
    finished = answer.written.split("\0")[:-1]  # a record ends with NUL: the last piece never finished
    return [
        outcome(name, python, finished[index]) if index < len(finished) else CollectorError(f"{name} under {python} did not finish")
        for index, name in enumerate(names)
    ], answer.stderr


def outcome(name: str, python: str, record: str) -> Union[dict, CollectorError]:
    """One finished record of target/batch.py: the script's JSON, or why it has none."""
    status, _, text = record.partition("\n")
    if status != "ok":
        return CollectorError(f"{name} under {python} {text}")
    try:
        return parsed(f"{name} under {python}", text)
    except CollectorError as error:
        return error


def site_folders(facts: dict, prefix: str) -> list:
    """The environment's own site-packages folders on the interpreter's path."""
    paths = facts.get("python", {}).get("sys_path", ())
    return [p for p in paths if p.startswith(prefix.rstrip("/") + "/") and p.rstrip("/").endswith("site-packages")]


def conda(ctx, facts: dict, found: dict) -> dict:
    """The conda records and activation `found` by target/conda.py and, in a conda environment, its
    C++ runtime read from the ELF files on disk."""
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
    """The interpreter's facts and its conda facts, both read in one start of the interpreter."""
    (facts, found), stderr = run_target_scripts(ctx.python, ("facts", "conda"), env=ctx.environ)
    if isinstance(facts, CollectorError):
        raise facts
    facts["pth_errors"] = pth_errors(stderr)
    facts["torch_kernels"] = installed_torch_kernels(facts)
    facts["numpy_builds"] = numpy_builds(facts.get("distributions") or ())
    facts["conda"] = {"error": str(found)} if isinstance(found, CollectorError) else conda(ctx, facts, found)
    return facts
