"""What really imports: every installed distribution's top-level modules, imported in crash-isolated
children of the diagnosed interpreter (`check --imports`).

The plan (target/imports.py) lists the modules and those that a file elsewhere on sys.path shadows.
The modules are imported in batches, one child per batch, as many children at once as there are
usable CPUs. Each import has its own time limit (the child's watchdog) and each child an absolute one
(proc/children.py), so a hang is a result, never a stall. A child reports each module's begin and end (and
ends `killed-parent` after an import that killed its parent, the intermediary): when it
dies, the modules that ended keep their results, the one that began and never ended is run again
alone (its crash is then its own, not the batch's), and the rest go on in a new child. A failed
import is also repeated alone: a verdict is about the module in a fresh interpreter, not about what
the batch's earlier imports left behind.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple

from packaging.utils import canonicalize_name as normalize

from envdoctor.collect.target import CollectorError, run_target_script
from envdoctor.cpus import workers as usable_workers
from envdoctor.proc.children import NO_BYTECODE, ChildResult, stream_child
from envdoctor.target import script_source

DEFAULT_MODULE_TIMEOUT_S = 60.0
STARTUP_S = 30.0  # per child, on top of its imports' own limits: the interpreter's start, the watchdog's dump
BATCHES_PER_WORKER = 3  # small enough to share the work evenly, large enough that heavy imports repeat rarely
OUTPUT_CHARS = 3000  # of what a failing module printed, the last this many characters are kept
PLAN_TIMEOUT_S = 120.0
WATCHDOG_LINE = "Timeout ("  # faulthandler's first line when an import ran past its limit
# Distributions whose import takes seconds, most costly first: what batches are grouped by.
HEAVY_IMPORTS = ("torch", "tensorflow", "jax", "scikit-learn", "scipy", "pandas", "matplotlib", "numpy")


@dataclass(frozen=True)
class ImportOptions:
    """How to import: the time limit of one module's import, and how many children at once (None: usable CPUs)."""

    module_timeout_s: float = DEFAULT_MODULE_TIMEOUT_S
    workers: Optional[int] = None


@dataclass(frozen=True)
class Module:
    """A top-level module and the distribution it is imported for."""

    name: str
    distribution: str
    version: str
    location: str


class BatchReader:
    """Splits a batch child's merged output into import events and each module's own output."""

    def __init__(self):
        from envdoctor.target.imports import MARK  # the script's module loads importlib.metadata: only --imports needs it

        self.mark = MARK
        self.ended: Dict[str, dict] = {}
        self.running: Optional[str] = None
        self.output: List[str] = []

    def __call__(self, line: str) -> None:
        at = line.find(self.mark)
        event = parsed_event(line[at + len(self.mark):]) if at >= 0 else None
        if event is None:
            self.keep(line)
            return
        if at:
            self.keep(line[:at])
        if event.get("event") == "begin":
            self.running, self.output = event.get("module"), []
        elif event.get("event") == "end" and event.get("module") == self.running:
            self.ended[self.running] = ended_result(event, self.output_text())
            self.running, self.output = None, []

    def keep(self, line: str) -> None:
        if self.running is not None and line:
            self.output.append(line)
            while len(self.output) > 1 and sum(len(kept) for kept in self.output) > OUTPUT_CHARS:
                self.output.pop(0)

    def output_text(self) -> str:
        return "\n".join(self.output)[-OUTPUT_CHARS:]


def parsed_event(text: str) -> Optional[dict]:
    try:
        event = json.loads(text)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def ended_result(event: Mapping, output: str) -> dict:
    """A module whose import returned: ok, or failed with its exception (and what it printed)."""
    result = {"status": event.get("status", "failed"), "duration_s": event.get("duration_s")}
    if result["status"] != "ok":
        result.update(error=event.get("error"), output=output)
    if result["status"] == "killed-parent":
        result["signal"] = event.get("signal")
    return result


def died_result(child: ChildResult, output: str) -> dict:
    """The module that was importing when its child ended: killed by a signal, past its limit, or exited."""
    if child.timed_out or WATCHDOG_LINE in output:
        status = "timed_out"
    elif child.signal_name:
        status = "crashed"
    else:
        status = "exited"
    return {"status": status, "signal": child.signal_name, "returncode": child.returncode, "duration_s": round(child.duration_s, 3), "output": output}


def batch_argv(python: str, limit: float, names: Sequence[str]) -> List[str]:
    """`-c` keeps the script's folder off sys.path; the working directory stays on it, as for the user."""
    source = script_source("imports")
    return [python, NO_BYTECODE, "-X", "faulthandler", "-c", source, "import", str(limit), *names]


def run_batch(python: str, names: Sequence[str], environ: Mapping[str, str], limit: float) -> Tuple[Dict[str, dict], List[str]]:
    """Import `names` in one child: the results of the modules it settled, and the ones it never reached."""
    reader = BatchReader()
    env = {**environ, "PYTHONUNBUFFERED": "1"}
    child = stream_child(batch_argv(python, limit, names), reader, timeout=STARTUP_S + limit * len(names), env=env)
    if child.start_error:
        raise CollectorError(f"the import child under {python} {child.describe()}")
    settled = dict(reader.ended)
    for result in settled.values():
        if result["status"] == "killed-parent":  # its parent's own end says by which signal
            result["signal"] = child.signal_name or result["signal"]
    if reader.running is not None:
        settled[reader.running] = died_result(child, reader.output_text())
        if child.parent_killed:  # its parent died first, and took it along before its import returned
            settled[reader.running].update(status="killed-parent")
    elif child.signal_name and settled and list(settled.values())[-1]["status"] != "killed-parent":
        # Killed between imports, by something the child did not see coming: first in its child the
        # last import is blamed; otherwise it is run again first in a new one.
        last = list(settled)[-1]
        if last == names[0]:
            settled[last] = died_result(child, settled[last].get("output", ""))
        else:
            del settled[last]
    if not settled:  # it died before its first import: the interpreter's start failed, no module did
        raise CollectorError(f"the import child under {python} {child.describe()} before importing {names[0]}: {child.stdout.strip()[-300:]}")
    return settled, [name for name in names if name not in settled]


def settle(python: str, names: Sequence[str], environ: Mapping[str, str], limit: float) -> Dict[str, dict]:
    """Every module of a batch settled: a child's death costs only the module it was importing. A module
    that crashed or failed after others in its child is run again alone (a hang is not: it already took
    its full limit), so each verdict is the module's own in a fresh interpreter."""
    results: Dict[str, dict] = {}
    fresh = set()
    pending = list(names)
    while pending:
        fresh.add(pending[0])
        settled, pending = run_batch(python, pending, environ, limit)
        results.update(settled)
    for name, result in list(results.items()):
        if result["status"] not in ("ok", "timed_out") and name not in fresh:
            results[name] = run_batch(python, [name], environ, limit)[0][name]
    return results


def planned_modules(plan: Mapping) -> List[Module]:
    """Each top-level module once, for the first distribution that provides it (namespace packages are
    shared), those that need the same heavy imports next to each other."""
    dists = plan.get("distributions", ())
    requires = {normalize(d["name"]): d.get("requires", ()) for d in dists}
    modules: Dict[str, Tuple[tuple, Module]] = {}
    for dist in dists:
        key = heavy_key(dependency_closure(normalize(dist["name"]), requires))
        for name in dist.get("modules", ()):
            modules.setdefault(name, (key + (name,), Module(name, dist["name"], dist.get("version", ""), dist.get("location", ""))))
    return [module for _, module in sorted(modules.values(), key=lambda pair: pair[0])]


def dependency_closure(name: str, requires: Mapping[str, Sequence[str]]) -> Set[str]:
    """The installed distributions that importing `name` may load: itself and what it requires, transitively."""
    found, pending = set(), [name]
    while pending:
        current = pending.pop()
        if current in found or current not in requires:
            continue
        found.add(current)
        pending.extend(requires[current])
    return found


def heavy_key(closure: Set[str]) -> tuple:
    """Sorts modules that load torch together, then those that load scikit-learn, and so on: one child
    imports a heavy dependency once for all of them instead of each child importing it again."""
    return tuple(heavy not in closure for heavy in HEAVY_IMPORTS)


def batches(names: Sequence[str], count: int) -> List[List[str]]:
    """`names` in `count` contiguous runs, so neighbours share their heavy imports."""
    size = -(-len(names) // max(count, 1))
    return [list(names[at:at + size]) for at in range(0, len(names), size)] if names else []


def import_modules(python: str, names: Sequence[str], environ: Mapping[str, str], options: ImportOptions) -> Dict[str, dict]:
    workers = options.workers or usable_workers(len(names) or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = pool.map(lambda batch: settle(python, batch, environ, options.module_timeout_s), batches(names, workers * BATCHES_PER_WORKER))
        return {name: result for part in done for name, result in part.items()}


def collect(python: str, environ: Mapping[str, str], options: ImportOptions = ImportOptions()) -> dict:
    """The import facts of the interpreter `python`: each module's outcome and the shadowed ones."""
    started = time.monotonic()
    plan = run_target_script(python, "imports", "plan", timeout=PLAN_TIMEOUT_S, env=dict(environ))
    modules = planned_modules(plan)
    results = import_modules(python, [m.name for m in modules], environ, options)
    return {
        "module_timeout_s": options.module_timeout_s,
        "distributions": len(plan.get("distributions", ())),
        "modules": [{"module": m.name, "distribution": m.distribution, "version": m.version, "location": m.location, **results[m.name]} for m in modules],
        "shadowed": plan.get("shadowed", []),
        "duration_s": round(time.monotonic() - started, 3),
    }
