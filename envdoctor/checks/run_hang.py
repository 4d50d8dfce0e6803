"""A command that went silent (`envdoctor run --hang-timeout`): what each thread was waiting on.

Silence alone is not a hang. The CPU of the last samples tells the two apart: a command still using
a CPU was computing (slow, or looping without end); an idle one was waiting. When at least two of
its threads wait on locks (a `with lock:` or `.acquire(` line, threading's Condition or Semaphore,
the import lock) and nothing runs, they wait on each other: a deadlock.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Iterable, List, Mapping, Optional

from envdoctor.checks import check
from envdoctor.crash import stacks
from envdoctor.facts import view_of
from envdoctor.facts.run import RunView
from envdoctor.facts.run_growth import number
from envdoctor.model import Finding, Remedy, Severity

RECENT_SAMPLES = 3
BUSY_CPU_PERCENT = 20.0
IDLE_CPU_PERCENT = 5.0
EVIDENCE_FRAMES = 10
LOCK_LINE = re.compile(r"^(?:async\s+)?with\s.*:\s*(?:#.*)?$|\.acquire\(")
IMPORT_LOCK_FILE = "<frozen importlib._bootstrap>"
IMPORT_LOCK_FUNCTIONS = ("_lock_unlock_module", "acquire", "_get_module_lock", "__enter__")
THREADING_WAITS = {"acquire": "lock", "__enter__": "lock", "wait": "condition", "wait_for": "condition", "join": "join", "_wait_for_tstate_lock": "join"}
LOCKS = ("lock", "import lock")


def recent_cpu_percent(run: Mapping[str, Any]) -> Optional[float]:
    """The tree's mean CPU over its last samples (the first sample is psutil's baseline, always 0)."""
    samples = (run.get("memory") or {}).get("samples") or []
    values = [number(s.get("cpu_percent")) for s in samples[1:] if isinstance(s, Mapping)]
    values = [v for v in values if v is not None][-RECENT_SAMPLES:]
    return sum(values) / len(values) if values else None


def threads_of(run: Mapping[str, Any]) -> List[dict]:
    """The hang's threads that have Python frames (of the shape a capture writes: a recorded report may hold anything)."""
    dump = run.get("python_stacks")
    threads = dump.get("threads") if isinstance(dump, Mapping) else None
    return [t for t in threads if well_formed(t)] if isinstance(threads, list) else []


def well_formed(thread: Any) -> bool:
    frames = thread.get("frames") if isinstance(thread, Mapping) else None
    return bool(frames) and isinstance(frames, list) and all(isinstance(f, Mapping) and isinstance(f.get("file"), str) for f in frames)


@check("run.hang", "The command printed nothing for its hang timeout and was ended", requires=("run",))
def hang(facts: Mapping[str, Any]) -> Iterable[Finding]:
    run = view_of(facts, RunView)
    if run.ending_kind == "hang":
        yield hung_finding(run.record)


def hung_finding(run: Mapping[str, Any]) -> Finding:
    threads = threads_of(run)
    cpu = recent_cpu_percent(run)
    working = cpu is not None and cpu >= BUSY_CPU_PERCENT
    where = "; ".join(f"{stacks.thread_label(t)} {'is in' if working else 'waits in'} {stacks.frame_text(t['frames'][0])}" for t in threads)
    stacks_text = ("Every thread's stack at that moment: " + where + ".") if where else "No Python stack was written (not a Python process, or faulthandler was off)."
    silent = f"The command printed nothing for {run['hang_timeout_s']:g} s"
    gdb = Remedy("For native frames of its threads, re-run under gdb:", "envdoctor run --gdb --hang-timeout " + f"{run['hang_timeout_s']:g} -- " + shlex.join(run["command"]))
    if working:
        return Finding(
            id="run.hang",
            severity=Severity.WARNING,
            title=f"{silent} but still used CPU ({cpu:.0f} %) when it was ended after {run['duration_s']:.1f} s: slow or busy-looping, not hung",
            explanation="A command that keeps a CPU busy is computing, not waiting: a loop that never meets its end, or work far slower than expected (GPU code running on the CPU, threads oversubscribing the cores). " + stacks_text,
            evidence={"hang_timeout_s": run["hang_timeout_s"], "threads": len(threads), "still_working": True, "cpu_percent": round(cpu, 1)},
            remedies=(
                Remedy("If it is only slow, give it more time to print something:", f"envdoctor run --hang-timeout {4 * run['hang_timeout_s']:g} -- " + shlex.join(run["command"])),
                Remedy("If it loops, the busy thread's top frame above is the loop; check its exit condition."),
                gdb,
            ),
        )
    return Finding(
        id="run.hang",
        severity=Severity.ERROR,
        title=f"{silent} and was ended as hung after {run['duration_s']:.1f} s",
        explanation=stacks_text,
        evidence={"hang_timeout_s": run["hang_timeout_s"], "threads": len(threads), "still_working": False, "cpu_percent": None if cpu is None else round(cpu, 1)},
        remedies=(
            Remedy("Read the top frame of each thread: a lock, a queue or a join waits for a thread or worker process that died or is itself blocked."),
            gdb,
        ),
    )


def wait_of(frame: Mapping[str, Any]) -> Optional[str]:
    """What a thread whose innermost frame is `frame` waits on: "lock", "import lock", "condition"
    (Condition, Event, Semaphore, queue), "join", or None when it is not waiting on a lock."""
    name, function = frame.get("file") or "", frame.get("function")
    if name == IMPORT_LOCK_FILE:
        return "import lock" if function in IMPORT_LOCK_FUNCTIONS else None
    if name.endswith("threading.py"):
        return THREADING_WAITS.get(function)
    source = frame.get("source")
    return "lock" if isinstance(source, str) and LOCK_LINE.search(source) else None


def deadlocked(threads: List[dict]) -> List[dict]:
    """The waiting threads (lock waiters first) when they deadlock: at least two wait, one of them on a
    lock, and at least two not on a join, or one on the import lock (its holder waits for it to
    finish); else []. Threads that only wait on conditions and queues wait for a producer (a worker
    process, a DataLoader worker that died of EMFILE), not on each other."""
    waits = [(wait_of(t["frames"][0]), t) for t in threads]
    waiting = [(kind, t) for kind, t in waits if kind]
    others = [t for kind, t in waiting if kind != "join"]
    import_lock = any(kind == "import lock" for kind, _ in waiting)
    on_lock = any(kind in LOCKS for kind, _ in waiting)
    if len(waiting) < 2 or not on_lock or not (len(others) >= 2 or import_lock):
        return []
    return sorted((t for _, t in waiting), key=lambda t: wait_of(t["frames"][0]) not in LOCKS)


def waits_at(thread: Mapping[str, Any]) -> str:
    """e.g. "`with lock_b:` (prog.py:10)", or the frame when its line is unknown."""
    top = thread["frames"][0]
    own = stacks.frame_at_fault(thread["frames"])
    line = own.get("source") if own else None
    return f"`{line}` ({stacks.short(own['file'])}:{own.get('line')})" if isinstance(line, str) else stacks.frame_text(top)


@check("run.deadlock", "Threads of a hung command waiting on each other's locks", requires=("run",))
def deadlock(facts: Mapping[str, Any]) -> Iterable[Finding]:
    run = view_of(facts, RunView)
    if run.ending_kind != "hang":
        return
    cpu = recent_cpu_percent(run.record)
    stuck = deadlocked(threads_of(run.record))
    if stuck and (cpu is None or cpu < IDLE_CPU_PERCENT):
        yield deadlock_finding(stuck, cpu)


def deadlock_finding(stuck: List[dict], cpu: Optional[float]) -> Finding:
    first, second = stuck[0], stuck[1]
    more = len(stuck) - 2
    on_import = [t for t in stuck if wait_of(t["frames"][0]) == "import lock"]
    remedies = [
        Remedy("Take locks in one fixed order in every thread (or hold one lock at a time); where that cannot be, acquire with a timeout and log who is waiting: lock.acquire(timeout=60)."),
    ]
    if on_import:
        remedies.insert(0, Remedy("A thread waits for the import of a module that another thread is still importing, while that thread waits for it: never start and wait on threads at a module's top level; start them from a function called once the imports have finished."))
    idle = "the process used no CPU" if cpu is None else f"the process used {cpu:.0f} % CPU"
    return Finding(
        id="run.deadlock",
        severity=Severity.ERROR,
        title=f"Deadlock: the {stacks.thread_label(first)} waits at {waits_at(first)} while the {stacks.thread_label(second)} waits at {waits_at(second)}" + (f" (and {more} more waiting)" if more > 0 else ""),
        explanation=f"{len(stuck)} threads are waiting (on: {', '.join(sorted({wait_of(t['frames'][0]) for t in stuck}))}) and {idle} in its last samples: each holds what another needs, so none can go on.",
        evidence={
            "cpu_percent": None if cpu is None else round(cpu, 1),
            "threads": [
                {"thread": stacks.thread_label(t), "waits_for": wait_of(t["frames"][0]), "at": waits_at(t), "frames": [stacks.frame_text(f) for f in t["frames"][:EVIDENCE_FRAMES]]}
                for t in stuck
            ],
        },
        remedies=tuple(remedies),
    )
