"""Facts about the diagnosed interpreter, gathered by running a stdlib-only script under it."""

from __future__ import annotations

import json
from typing import List, Sequence, Union

from envdoctor.collect.elf import cxx_runtime
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
    return parsed(name, python, result.stdout)


def parsed(name: str, python: str, output: str) -> dict:
    try:
        return json.loads(output)
    except ValueError as error:
        raise CollectorError(f"{name} under {python} printed no JSON ({error})") from None


def run_target_scripts(python: str, names: Sequence[str], timeout: float = TIMEOUT_S, env=None) -> List[Union[dict, CollectorError]]:
    """Run the argument-less target scripts `names` under `python` in one start of it (target/batch.py)
    and return, for each, the JSON it printed or the CollectorError that says why there is none. A
    script the child did not finish (it failed to start, or died or ran out of time in that script)
    has the child's end as its error."""
    sources = [script_source(name) for name in names]
    result = run_child([python, "-c", script_source("batch"), *sources], timeout=timeout, env=env)
    finished = result.stdout.split("\0")[:-1]  # a record ends with NUL: the last piece never finished
    tail = (result.stderr.strip().splitlines()[-1:] or [""])[0]
    return [
        outcome(name, python, finished[index]) if index < len(finished) else CollectorError(f"{name} under {python} {result.describe()} {tail}".strip())
        for index, name in enumerate(names)
    ]


def outcome(name: str, python: str, record: str) -> Union[dict, CollectorError]:
    """One finished record of target/batch.py: the script's JSON, or why it has none."""
    status, _, text = record.partition("\n")
    if status != "ok":
        return CollectorError(f"{name} under {python} {text}")
    try:
        return parsed(name, python, text)
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


def collect(ctx) -> dict:
    """The interpreter's facts and its conda facts, both read in one start of the interpreter."""
    facts, found = run_target_scripts(ctx.python, ("facts", "conda"), env=ctx.environ)
    if isinstance(facts, CollectorError):
        raise facts
    facts["conda"] = {"error": str(found)} if isinstance(found, CollectorError) else conda(ctx, facts, found)
    return facts
