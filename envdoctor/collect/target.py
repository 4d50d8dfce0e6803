"""Facts about the diagnosed interpreter, gathered by running a stdlib-only script under it."""

from __future__ import annotations

import json

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


def collect(ctx) -> dict:
    return run_target_script(ctx.python, "facts", env=ctx.environ)
