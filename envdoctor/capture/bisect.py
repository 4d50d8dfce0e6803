"""`envdoctor run --bisect`: which single change to the environment makes the command's failure go away.

After the command failed, it is run again once per variation of the probe's bisection (thread
variables = 1, no CUDA, generic CPU kernels, no LD_LIBRARY_PATH/LD_PRELOAD, no PYTHONPATH, no user
site, MKL on GNU OpenMP), each with that one change to the environment the command ran in. The
re-runs go in parallel, as many at a time as there are usable CPUs; their output is kept (a short
tail each), not shown, and their stdin is empty. Each is bounded by twice the time the original took
to fail plus BOUND_MARGIN_S, when its whole process family is ended.

A variation's outcome, against the original failure:
- passes: it exited 0;
- survives: still running at the bound without failing, so it outlived the failure (a re-run of a
  hang that stayed silent as long as the hang timeout hangs again, and fails);
- fails: the same exit status (128+N for a signal, 124 for a hang);
- fails-differently: another ending;
- not-applied: the command set the variable again before Python started, where only the process's
  start could change it (LD_LIBRARY_PATH, LD_PRELOAD: the dynamic loader reads them then);
- not-applicable: it changes nothing here (the setting is already there, no GPU for no-cuda), not run.

A wrapper script that exports the variable being varied would undo the change before the program
sees it, so each re-run carries the start-up hook (target/audit.py) with the variation: every Python
process makes it again when it starts, and says whether it had to ("re-applied"), did not need to
("as-given"), or could not ("too-late"). `applied` words what happened.
"""

from __future__ import annotations

import json
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, List, Mapping, Optional, Tuple

from envdoctor import host
from envdoctor.proc import children
from envdoctor.capture import opened
from envdoctor.capture.gpu import DEVICE_NODES
from envdoctor.capture.supervise import child_environment
from envdoctor.capture.tail import Tail
from envdoctor.cpus import workers
from envdoctor.crash import signals
from envdoctor.probe.variations import VARIATIONS, Variation
from envdoctor.words import plural

BOUND_MARGIN_S = 5.0
TAIL_LINES = 5

Progress = Callable[[str], None]


def failure_text(run: Mapping) -> str:
    """e.g. "killed by SIGSEGV", "exit status 3", "hung (no output for 600 s)"."""
    end = run["ending"]
    if end["kind"] == "signal":
        return f"killed by {end['signal_name']}"
    if end["kind"] == "hang":
        return f"hung (no output for {run['hang_timeout_s']:g} s)"
    return f"exit status {end['exit_status']}"


def not_applicable(variation: Variation, environ: Mapping[str, str]) -> Optional[str]:
    """Why `variation` cannot change anything for the command here (`environ`: the environment its
    program really had), or None when it is worth a run."""
    if variation.apply(environ) == dict(environ):
        return "the environment already has this setting"
    if variation.needs_cuda and not any(host.exists(node) for node in DEVICE_NODES):
        return "no NVIDIA GPU on this machine"
    return None


def judged(run: Mapping, result: children.ChildResult, silence_s: float, bound: float) -> Tuple[str, str]:
    """(outcome, ending) of one re-run, compared with the original failure."""
    if result.start_error:
        return "fails-differently", result.describe()
    hang_timeout = run.get("hang_timeout_s")
    if result.timed_out:
        if run["ending"]["kind"] == "hang" and hang_timeout and silence_s >= hang_timeout:
            return "fails", f"no output for {silence_s:.0f} s at the {bound:g} s bound: it hangs again"
        return "survives", f"still running at the {bound:g} s bound without failing; ended by the doctor"
    if result.returncode == 0:
        return "passes", result.describe()
    same = result.returncode is not None and signals.exit_status(result.returncode) == run["ending"]["exit_status"]
    return ("fails" if same else "fails-differently"), result.describe()


def variation_spec(variation: Variation) -> str:
    """The variation as the start-up hook reads it from ENVDOCTOR_VARIATION."""
    return json.dumps({"set": dict(variation.sets), "unset": list(variation.unsets)})


def applied(records: List[dict]) -> Tuple[str, bool]:
    """What the Python processes of a re-run said about the variation: words, and whether it could
    not be applied (a variable only the process's start could change had been set again)."""
    said = [r.get("variables") for r in records if r.get("event") == "variation" and isinstance(r.get("variables"), dict)]
    if not said:
        return "in the command's environment (no Python process reported)", False
    late = sorted({name for variables in said for name, how in variables.items() if how == "too-late"})
    again = sorted({name for variables in said for name, how in variables.items() if how == "re-applied"})
    if late:
        return f"not applied: the command set {', '.join(late)} again before Python started, and only a process's start reads it", True
    if again:
        return f"made again at interpreter start in {plural(sum(1 for v in said if 're-applied' in v.values()), 'process')}: the command had changed {', '.join(again)}", False
    return f"as given, in {plural(len(said), 'Python process')}", False


def attempt(run: Mapping, variation: Variation, environ: Mapping[str, str], bound: float) -> dict:
    """Run the command once with `variation` applied, made again in each of its Python processes at
    start, and judge how it ended."""
    tail = Tail(max_lines=TAIL_LINES, max_raw_bytes=0)
    varied = variation.apply(environ)
    with tempfile.TemporaryDirectory(prefix="envdoctor-bisect-") as workdir:
        hook = opened.hook_environment(Path(workdir), varied)
        env = child_environment({**varied, **hook, opened.VARIATION_VARIABLE: variation_spec(variation)})[0]
        result = children.run_piped(
            run["command"], bound, env, None,
            lambda data: tail.feed("stdout", data),
            lambda data: tail.feed("stderr", data),
        )
        how, not_applied = applied(opened.records(Path(workdir) / "audit.log"))
    outcome, ending = judged(run, result, tail.silence_s(), bound)
    return {
        "name": variation.name,
        "command": variation.command(),
        "outcome": "not-applied" if not_applied else outcome,
        "duration_s": round(result.duration_s, 3),
        "ending": ending,
        "applied": how,
        "tail": [line["text"] for line in tail.recent()],
    }


def skipped(variation: Variation, reason: str) -> dict:
    return {"name": variation.name, "command": variation.command(), "outcome": "not-applicable", "duration_s": None, "ending": reason, "applied": None, "tail": []}


def bisect_run(run: dict, environ: Mapping[str, str], progress: Optional[Progress] = None) -> dict:
    """The bisection of a failed run (stored as `run["bisection"]`): each variation's outcome.

    `progress` is handed one line as the re-runs start and one as each ends. A Ctrl-C ends every
    re-run at once and is raised here."""
    bound = round(2 * run["duration_s"] + BOUND_MARGIN_S, 1)
    real = opened.real_environment(run, environ)  # a wrapper's exports count: the program saw them
    reasons = {v.name: not_applicable(v, real) for v in VARIATIONS}
    candidates = [v for v in VARIATIONS if not reasons[v.name]]
    at_once = workers(len(candidates))
    if progress and candidates:
        progress(f"bisecting: {len(candidates)} variations in parallel ({at_once} at a time), each up to {bound:g} s")

    def tried(variation: Variation) -> dict:
        result = attempt(run, variation, environ, bound)
        if progress and not children.interrupted():  # a re-run the interrupt ended tells nothing
            progress(f"bisect: {result['name']} {result['outcome']} ({result['ending']}, {result['duration_s']:.1f} s)")
        return result

    with children.children_end_on_interrupt(), ThreadPoolExecutor(max_workers=at_once) as pool:
        done = dict(zip([v.name for v in candidates], pool.map(tried, candidates)))
    variations: List[dict] = [done.get(v.name) or skipped(v, reasons[v.name] or "") for v in VARIATIONS]
    return {"timeout_s": bound, "failure": failure_text(run), "variations": variations}
