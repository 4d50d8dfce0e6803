"""Re-checking an environment after a fix, in fresh child processes of the target interpreter.

The installers' exit codes say little about whether the result works: a stale wheel of another CUDA
family can survive, torch can fail to import, or a package the user trains with can no longer load
beside the new torch. So the distributions are read again from disk, torch is imported for real, and
where the plan asks for it the probe ladder (numpy → torch → CUDA → sb3 → MaskablePPO construct, learn,
save/load) runs before the fix and after it: a stage that passed before and does not after is the
fix's doing. Everything runs in children, where a crash is a result and not the doctor's crash.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Tuple

from envdoctor.collect.target import CollectorError, run_target_script
from envdoctor.facts.target import normalize
from envdoctor.fix.plan import Expectation
from envdoctor.knowledge.wheels import cuda_family
from envdoctor.probe.probing import run_probe
from envdoctor.probe.runner import ProbeOptions
from envdoctor.proc.children import run_child

IMPORT_TIMEOUT_S = 300.0
IMPORT_TORCH = 'import json, torch; print(json.dumps({"version": torch.__version__, "cuda": torch.version.cuda}))'


@dataclass(frozen=True)
class Verification:
    """What the re-check found: no problems means the fix did what its plan said."""

    problems: Tuple[str, ...]
    torch: Optional[Mapping[str, Any]] = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict:
        return {"ok": self.ok, "problems": list(self.problems), "torch": self.torch}


def ladder_argv(python: str) -> Tuple[str, ...]:
    """The command that runs the probe ladder in `python`'s environment, as a user would."""
    return ("envdoctor", "check", "--python", python, "--only", "probe", "--no-save")


def ladder(python: str) -> Tuple[dict, ...]:
    """Each ladder stage's id, title, status and reason in `python`'s environment (no bisection:
    only whether each stage passes matters here)."""
    probe = run_probe(python, os.environ, ProbeOptions(bisect=False))
    return tuple({k: stage.get(k) for k in ("id", "title", "status", "reason")} for stage in probe.get("stages", ()))


def regressions(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> Tuple[str, ...]:
    """The stages that passed before the fix and do not after it, said with how they ended."""
    ended = {stage["id"]: stage for stage in after}
    return tuple(
        f"{stage.get('title') or stage['id']} passed before the fix and is {ended.get(stage['id'], {}).get('status', 'not reached')} after it"
        + (f" ({ended[stage['id']]['reason']})" if ended.get(stage["id"], {}).get("reason") else "")
        for stage in before
        if stage.get("status") == "passed" and ended.get(stage["id"], {}).get("status") != "passed"
    )


def import_torch_argv(*python: str) -> Tuple[str, ...]:
    """`python -c ...` importing torch; `python` may be a launcher such as `conda run -n NAME python`."""
    return (*python, "-c", IMPORT_TORCH)


def distribution_problems(expect: Expectation, installed: Mapping[str, str]) -> Tuple[str, ...]:
    """Planned versions that are not in place, removed names still present, other CUDA families left."""
    problems = [
        f"{name} is {installed.get(normalize(name), 'not installed')}, planned {version}"
        for name, version in expect.installed.items()
        if installed.get(normalize(name)) != version
    ]
    problems += [f"{name} {installed[normalize(name)]} is still installed" for name in expect.absent if normalize(name) in installed]
    if expect.families is not None:
        stray = {n: cuda_family(n, v) for n, v in installed.items() if cuda_family(n, v) not in (None, *expect.families)}
        allowed = ", ".join(expect.families) or "no CUDA family"
        problems += [f"{n} ({family}) is left beside {allowed}" for n, family in sorted(stray.items())]
    return tuple(problems)


def torch_import(python: str, expect: Expectation) -> Tuple[Tuple[str, ...], Optional[dict]]:
    result = run_child(import_torch_argv(python), timeout=IMPORT_TIMEOUT_S)
    if not result.ok:
        tail = (result.stderr.strip().splitlines() or [""])[-1]
        return (f"`import torch` {result.describe()}: {tail}".strip(),), None
    try:
        found = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return (f"`import torch` printed no version: {result.stdout.strip()[:200]}",), None
    if expect.torch_version and found.get("version") != expect.torch_version:
        return (f"torch.__version__ is {found.get('version')}, planned {expect.torch_version}",), found
    return (), found


def verify(python: str, expect: Expectation) -> Verification:
    """Read the environment again and import torch where the plan expects it to work."""
    try:
        facts = run_target_script(python, "facts")
    except CollectorError as error:
        return Verification((f"cannot read the environment again: {error}",))
    installed = {normalize(d["name"]): d["version"] for d in facts.get("distributions", ())}
    problems = distribution_problems(expect, installed)
    torch = None
    if expect.torch_imports:
        import_problems, torch = torch_import(python, expect)
        problems += import_problems
    return Verification(problems, torch)
