"""Verdicts about one run of the user's command (`envdoctor run`): pure checks over the report's `run` facts.

Each says how the command ended, where (which thread, which frame), and, when the memory record
supports it, why: the OOM killer, a memory limit, or a GPU that was full just before a segfault.
Facts behind the OOM rules: docs/knowledge/domain-facts.md §8 (GPU memory exhaustion reported as a segfault,
host memory running out, /dev/shm).
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple

from envdoctor.checks import check
from envdoctor.checks.imports import shadow_remedies
from envdoctor.crash import bounds, signals, stacks
from envdoctor.facts import view_of
from envdoctor.facts.memory import MemoryView
from envdoctor.facts.run import SHADOWING_KEYS, RunView
from envdoctor.facts.run_describe import forwarding, left_behind_text, where
from envdoctor.facts.target import TargetView
from envdoctor.failures import Failure, classify_exception, first_line
from envdoctor.knowledge.errors import KnownError, matching
from envdoctor.model import Finding, Remedy, Severity
from envdoctor.words import gib, mib

GPU_FULL_FRACTION = 0.95
LIMIT_REACHED_FRACTION = 0.9
BEFORE_DEATH_S = 5.0
NATIVE_CRASHES = ("SIGSEGV", "SIGABRT", "SIGBUS")
# The size one failed allocation asked for, as NumPy ("Unable to allocate 6.57 TiB") and torch's CPU
# allocator ("you tried to allocate 40000000000000 bytes") state it.
ASKED = re.compile(r"Unable to allocate ([\d.]+) (\w?i?B)\b|you tried to allocate (\d+) bytes")
UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50, "EiB": 2**60}
HOST_OOM_TEXT = re.compile(r"\bMemoryError\b|Cannot allocate memory|std::bad_alloc|can't allocate memory|out of memory|Unable to allocate [\d.]+ \w?iB", re.IGNORECASE)
GPU_OOM_TEXT = re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|PxgCudaDeviceMemoryAllocator fail to allocate|Failed to allocate pinned memory")
ERROR_LINE = re.compile(r"^(?:[\w.]+(?:Error|Exception|Interrupt|Exit)\b|RuntimeError|Error:|error:|FATAL|Fatal)")
RECURSION_DEPTH = 50  # repeats of one cycle on a crashed stack that make it the overflow, not a coincidence
PHYSX_REFERENCE = "https://github.com/isaac-sim/OmniIsaacGymEnvs/issues/11"


def ending_kind(facts: Mapping[str, Any]) -> str:
    return view_of(facts, RunView).ending_kind


@check("run.crashed", "The command was killed by a signal: where it died", requires=("run",))
def crashed(facts: Mapping[str, Any]) -> Iterable[Finding]:
    if ending_kind(facts) == "signal":
        yield crashed_finding(view_of(facts, RunView).record)


def crashed_finding(run: Mapping[str, Any]) -> Finding:
    end = run["ending"]
    name = end["signal_name"]
    thread = stacks.crashed_thread(run.get("python_stacks"))
    remedies = [Remedy("Any native-crash cause envdoctor knows in this environment is among this report's findings; re-check after a change with:", "envdoctor check")]
    if not run.get("under_gdb") and name in signals.FAULTS:
        remedies.append(Remedy("Re-run under gdb for the native frame that faulted in every thread:", "envdoctor run --gdb -- " + shlex.join(run["command"])))
    if name == "SIGILL":
        remedies.insert(0, Remedy("Compare the CPU's instruction sets with what the wheels need:", "envdoctor check --only cpu"))
    if name == "SIGBUS":
        remedies.insert(0, Remedy("Give /dev/shm more room (DataLoader workers pass tensors through it):", "docker run --shm-size=8g ..."))
    return Finding(
        id="run.crashed",
        severity=Severity.ERROR,
        title=f"The command was killed by {name} after {run['duration_s']:.1f} s{where(run)}",
        explanation=f"{name}: {end['signal_meaning']}." + ("" if thread else " No Python stack was written (not a Python process, or faulthandler was off)."),
        evidence={"signal": name, "exit_status": end["exit_status"], "thread": stacks.thread_label(thread) if thread else None, "frames": (thread or {}).get("frames", [])[:5]},
        remedies=tuple(remedies),
    )


@check("run.exit-status", "The command exited with a failure status: its last error line", requires=("run",))
def exited(facts: Mapping[str, Any]) -> Iterable[Finding]:
    if ending_kind(facts) != "exit":
        return
    view = view_of(facts, RunView)
    status = view.ending["exit_status"]
    errors = [line for line in view.output_lines("stderr") if ERROR_LINE.match(line.strip())]
    last = errors[-1].strip() if errors else None
    yield Finding(
        id="run.exit-status",
        severity=Severity.WARNING,
        title=f"The command exited with status {status} after {view.duration_s:.1f} s" + (f": {last}" if last else ""),
        explanation="It ended by itself (no signal); the output's last lines below say why.",
        evidence={"exit_status": status, "last_error_line": last},
    )


@check("run.interrupted", "The command was interrupted by a signal sent from outside", requires=("run",))
def interrupted(facts: Mapping[str, Any]) -> Iterable[Finding]:
    if ending_kind(facts) != "interrupted":
        return
    view = view_of(facts, RunView)
    end = view.ending
    forwarded = ", ".join(end["forwarded_signals"])
    yield Finding(
        id="run.interrupted",
        severity=Severity.INFO,
        title=f"The command was interrupted by {forwarded} after {view.duration_s:.1f} s; " + "; ".join(forwarding(view.record)),
        explanation="The signal came from outside (Ctrl-C, a job scheduler, a container runtime) and was passed on to the command's process group and to every worker that had left it.",
        evidence={"forwarded_signals": end["forwarded_signals"], "forwarded_to": end.get("forwarded_to", [])},
    )


@check("run.left-behind", "Processes the command left running when it ended", requires=("run",))
def left_behind(facts: Mapping[str, Any]) -> Iterable[Finding]:
    view = view_of(facts, RunView)
    run = view.record
    text = left_behind_text(run)
    if not text:
        return
    yield Finding(
        id="run.left-behind",
        severity=Severity.WARNING,
        title=text,
        explanation="Worker or daemon processes the command started outlived it; left running they hold GPU memory, ports and files, and a job scheduler counts them against the next job.",
        evidence={"processes": run["left_behind"]},
        remedies=(Remedy("End workers before the program exits: join or terminate multiprocessing pools and subprocesses, close DataLoader iterators and vectorised environments (env.close())."),),
    )


def memory_evidence(view: RunView) -> List[str]:
    """Each independent sign that the command ran out of host memory."""
    memory, end = view.record["memory"], view.ending
    signs = []
    for cgroup in memory.get("cgroups", ()):
        if cgroup.get("oom_kills_during_run"):
            signs.append(f"the memory cgroup {cgroup['path']} (limit {mib(cgroup.get('limit_bytes'))}) counted {cgroup['oom_kills_during_run']} OOM kill(s) during the run")
    if memory.get("kernel_oom_lines"):
        signs.append("the kernel log says: " + memory["kernel_oom_lines"][-1])
    largest = max((s.get("vms_max_bytes") or 0 for s in memory.get("samples") or ()), default=None)  # the last sample may be of the dead process
    limit = memory.get("address_space_limit_bytes")
    text_hits = [line.strip() for line in view.output_lines() if HOST_OOM_TEXT.search(line) and not GPU_OOM_TEXT.search(line)]
    if limit and text_hits:
        signs.append(f"allocation failed ({text_hits[-1]}) under an address-space limit (RLIMIT_AS) of {mib(limit)}; the largest process had mapped {mib(largest)}")
    elif text_hits:
        signs.append(f"the output reports a failed allocation: {text_hits[-1]}")
    if end["signal_name"] == "SIGKILL":
        for cgroup in memory.get("cgroups", ()):
            if cgroup.get("limit_bytes") and (memory.get("peak_rss_bytes") or 0) >= LIMIT_REACHED_FRACTION * cgroup["limit_bytes"]:
                signs.append(f"it was killed with RSS at {mib(memory['peak_rss_bytes'])} of its cgroup's {mib(cgroup['limit_bytes'])} limit")
    return signs


def asked_bytes(lines: Iterable[str]) -> Optional[int]:
    """The largest size a failed allocation in `lines` asked for, or None when none states one."""
    sizes = []
    for line in lines:
        for found in ASKED.finditer(line):
            number, unit, plain = found.groups()
            sizes.append(int(plain) if plain else int(float(number) * UNITS.get(unit, 0)))
    return max(sizes, default=None)


def impossible_request(facts: Mapping[str, Any], view: RunView) -> Optional[Finding]:
    """One allocation larger than all of the machine's RAM and swap: no limit was reached, the size was
    computed wrong (a shape, a buffer length), and more memory would not help."""
    asked = asked_bytes(view.output_lines())
    memory = view_of(facts, MemoryView)  # Unrecorded in a report without the section: nothing to compare
    total, swap = getattr(memory, "ram_total_bytes", None), getattr(memory, "swap_total_bytes", None) or 0
    if asked is None or not total or asked <= total + swap:
        return None
    return Finding(
        id="run.out-of-memory",
        severity=Severity.ERROR,
        title=f"One allocation asked for {gib(asked)}, more than this machine's {gib(total)} of RAM{' and swap' if swap else ''}: a size computed wrong, not memory used up",
        explanation="The failed allocation alone is larger than all the memory the machine has, so no setting or larger limit lets it succeed: the shape or length it was computed from (an observation shape, a buffer_size, a batch dimension) is wrong.",
        evidence={"signs": [f"the output asks for {asked} bytes; RAM {total} bytes, swap {swap} bytes"], "asked_bytes": asked, "ram_total_bytes": total},
        remedies=(Remedy("Print the shape or size passed to the allocation that failed (the traceback's last line in your code) and correct it."),),
    )


@check("run.out-of-memory", "The command ran out of host memory (OOM killer, cgroup or address-space limit)", requires=("run",))
def out_of_memory(facts: Mapping[str, Any]) -> Iterable[Finding]:
    view = view_of(facts, RunView)
    run = view.record
    if ending_kind(facts) not in ("signal", "exit"):
        return
    signs = memory_evidence(view)
    if not signs:
        return
    impossible = impossible_request(facts, view)
    if impossible is not None:
        yield impossible
        return
    memory = run["memory"]
    yield Finding(
        id="run.out-of-memory",
        severity=Severity.ERROR,
        title=f"The command ran out of memory (peak RSS {mib(memory.get('peak_rss_bytes'))} at {memory.get('peak_rss_at_s') or 0:.1f} s)",
        explanation="Evidence: " + "; ".join(signs) + ".",
        evidence={"signs": signs, "peak_rss_bytes": memory.get("peak_rss_bytes"), "address_space_limit_bytes": memory.get("address_space_limit_bytes")},
        remedies=(
            Remedy("Shrink what grows: the replay buffer (buffer_size), n_envs, batch size, or DataLoader num_workers."),
            Remedy("Or give the run more memory: raise the container's/job's memory limit, or the address-space limit:", "ulimit -v unlimited"),
        ),
    )


def gpu_near_full(run: Mapping[str, Any]) -> List[str]:
    """GPUs that were at least GPU_FULL_FRACTION full in the last seconds before the command died."""
    gpu = run.get("gpu") or {}
    devices = gpu.get("devices") or []
    cutoff = run["duration_s"] - max(BEFORE_DEATH_S, 3 * run["sample_interval_s"])
    full = []
    for device in devices:
        total = device.get("total_bytes") or 0
        used = [s["gpu_used_bytes"][device["index"]] for s in gpu.get("samples", ()) if s["t"] >= cutoff and device["index"] < len(s["gpu_used_bytes"])]
        if total and used and max(used) >= GPU_FULL_FRACTION * total:
            full.append(f"GPU {device['index']} ({device.get('name')}) used {mib(max(used))} of {mib(total)}")
    return full


@check("run.gpu-out-of-memory", "The GPU ran out of memory, said so or surfaced as a native crash", requires=("run",))
def gpu_out_of_memory(facts: Mapping[str, Any]) -> Iterable[Finding]:
    view = view_of(facts, RunView)
    run = view.record
    end = view.ending
    if end["kind"] not in ("signal", "exit"):
        return
    full = gpu_near_full(run) if end["signal_name"] in NATIVE_CRASHES else []
    said = [line.strip() for line in view.output_lines() if GPU_OOM_TEXT.search(line)]
    if not full and not said:
        return
    disguised = end["kind"] == "signal"
    signs = full + ([f"the output says: {said[-1]}"] if said else [])
    yield Finding(
        id="run.gpu-out-of-memory",
        severity=Severity.ERROR,
        title=("Likely CUDA out-of-memory surfacing as a " + end["signal_name"]) if disguised else "The GPU ran out of memory",
        explanation="Evidence: " + "; ".join(signs) + (
            ". Native libraries (PhysX, custom CUDA kernels) often do not check a failed allocation and crash on the null pointer instead of raising." if disguised else "."
        ),
        evidence={"near_full": full, "output_line": said[-1] if said else None},
        remedies=(
            Remedy("Lower what lives on the GPU at once: num_envs, batch size, model size, or rollout length."),
            Remedy("For Isaac Gym / PhysX, raise the GPU buffer sizes in the sim config (e.g. gpu_max_rigid_contact_count, gpu_heap_capacity) or lower num_envs."),
            Remedy("Let PyTorch's allocator return fragmented memory:", "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
        ),
        references=(PHYSX_REFERENCE,),
    )


def module_of(path: str, package: str) -> Optional[str]:
    """The dotted module a source file is, counted from the last folder named like its top package."""
    parts = path.replace("\\", "/").split("/")
    if package not in parts[:-1] or not parts[-1].endswith(".py"):
        return None
    at = len(parts) - 1 - parts[::-1].index(package, 1)
    names = parts[at:-1] + ([] if parts[-1] == "__init__.py" else [parts[-1][:-3]])
    return ".".join(names)


def import_cycle(frames: Sequence[Mapping[str, Any]], module: str) -> List[str]:
    """The modules the traceback ran through, from the half-initialised `module` back to itself."""
    names = [module_of(f["file"], module.split(".")[0]) for f in reversed(frames)]
    names = [n for i, n in enumerate(names) if n and (i == 0 or n != names[i - 1])]
    start = names.index(module) if module in names else 0
    return names[start:] + [module]


def exception_evidence(exception: Mapping[str, Any], failure: Failure) -> dict:
    evidence = {
        "type": exception["type"],
        "message": first_line(exception.get("message", "")),
        "kind": failure.kind,
        "named": failure.named,
        "frames": [stacks.frame_text(f) for f in exception.get("frames", ())[:5]],
    }
    if failure.kind == "circular-import":
        evidence["cycle"] = import_cycle(exception.get("frames", ()), failure.named)
    if failure.worker:
        evidence["worker_exception"] = failure.worker
    return evidence


def exception_remedies(facts: Mapping[str, Any], failure: Failure) -> Tuple[Remedy, ...]:
    """The first step for each kind of failure, in the words of the interpreter the command ran."""
    python = view_of(facts, TargetView).executable
    top = failure.named.split(".")[0]
    if failure.kind == "circular-import":
        finds = f'import importlib.util; print(importlib.util.find_spec("{top}").origin)'
        return (
            Remedy(f"Check which file `import {top}` runs (a local file or folder of that name shadows the installed package):", shlex.join([python, "-c", finds])),
            Remedy("Break the cycle: import the module rather than a name from it (`from pkg import mod`), or move the import into the function that needs it."),
        )
    if failure.kind == "missing-module":
        return (Remedy(f"Install what provides `{top}` into the interpreter the command ran:", shlex.join([python, "-m", "pip", "install", top])),)
    if failure.kind == "worker-crash":
        return (Remedy("Step the environment in the main process (DummyVecEnv instead of SubprocVecEnv, num_workers=0 for a DataLoader): the crash then ends the command itself, where `envdoctor run --gdb` shows its native frame and the native-crash checks apply."),)
    return table_remedy(failure.known, python)


def table_remedy(known: Optional[KnownError], python: str) -> Tuple[Remedy, ...]:
    """The error table's remedy for a message, its command in the words of the interpreter that ran."""
    if known is None or not known.remedy:
        return ()
    return (Remedy(known.remedy, known.command.replace("{python}", shlex.quote(python)) if known.command else None),)


def loader_lines(loader: Optional[Mapping[str, Any]]) -> List[str]:
    """The dynamic linker's choice, in words: which file it loaded for which library and why, and which
    files define what that one lacks (capture resolved them as the loader does: collect/linker.py)."""
    if not isinstance(loader, Mapping):
        return []
    lines = []
    if loader.get("library") and loader.get("loaded"):
        needs = f" (which {loader['needed_by']} needs)" if loader.get("needed_by") else ""
        lacks = f"; it does not define {loader['version']}" if loader.get("version") and loader.get("loaded_defines_version") is False else ""
        lines.append(f"the loader took {loader['library']}{needs} from {loader['loaded']} (found through {loader.get('via')}){lacks}")
    if isinstance(loader.get("defined_by"), list) and loader["defined_by"]:
        lines.append(f"{loader['version']} is defined by {', '.join(map(str, loader['defined_by']))}")
    needed_list = loader.get("needed") if isinstance(loader.get("needed"), list) else []
    for needed in needed_list:
        if isinstance(needed, Mapping) and needed.get("loaded"):
            lines.append(f"{loader.get('needed_by')} links {needed['library']}: loaded from {needed['loaded']} (found through {needed.get('via')})")
    return lines


def loader_remedy(loader: Optional[Mapping[str, Any]]) -> Optional[Remedy]:
    """Take the entry that put the wrong library first out of the way."""
    if not isinstance(loader, Mapping) or not loader.get("loaded") or loader.get("loaded_defines_version") is not False:
        return None
    via, folder = str(loader.get("via") or ""), os.path.dirname(str(loader["loaded"]))
    if via.startswith("LD_LIBRARY_PATH="):
        kept = ":".join(f for f in via.split("=", 1)[1].split(":") if f and f != folder)
        return Remedy(f"Take {folder} out of LD_LIBRARY_PATH: it puts a {loader['library']} without {loader['version']} first:", f"export LD_LIBRARY_PATH={shlex.quote(kept)}" if kept else "unset LD_LIBRARY_PATH")
    if via.startswith("LD_PRELOAD="):
        return Remedy(f"Stop preloading {loader['loaded']}:", "unset LD_PRELOAD")
    if isinstance(loader.get("defined_by"), list) and loader["defined_by"]:
        return Remedy(f"Load a {loader['library']} that defines {loader['version']} ({loader['defined_by'][0]}) ahead of {loader['loaded']}, or install the package versions built against the older one.")
    return None


def in_own_code(frame: Optional[Mapping[str, Any]]) -> bool:
    """The frame is the program's own code: a real file outside the standard library and installed packages."""
    name = str((frame or {}).get("file") or "")
    return bool(name) and not name.startswith("<") and not stacks.PACKAGES.search(name) and not stacks.is_plumbing(name)


@check("run.exception", "The Python exception the command died of, classified", requires=("run",))
def exception(facts: Mapping[str, Any]) -> Iterable[Finding]:
    view = view_of(facts, RunView)
    run = view.record
    raised = run.get("exception")
    if ending_kind(facts) != "exit" or not raised:
        return
    failure = classify_exception(raised, "\n".join(view.output_lines("stderr")), (run.get("python_stacks") or {}).get("fatal_error"))
    evidence = exception_evidence(raised, failure)
    cycle = f" ({' → '.join(evidence['cycle'])})" if evidence.get("cycle") else ""
    fault = stacks.frame_at_fault(raised.get("frames") or [])
    evidence["at"] = stacks.frame_text(fault) if fault else None
    evidence["own_code"] = failure.kind == "error" and in_own_code(fault)
    if failure.kind == "worker-crash":
        evidence["worker_crashed"] = where(run).strip()
    if evidence["own_code"]:
        said = first_line(raised.get("message", ""))
        title = f"Your program raised {raised['type']} at {stacks.short(fault['file'])}:{fault.get('line')}" + (f": {said}" if said else "")
    else:
        title = f"The command died of {failure.name}{cycle}: {failure.first_line}"
    if failure.known is not None:
        evidence["sources"] = list(failure.known.sources)
    evidence["loader"] = loader_lines(run.get("loader"))
    remedies = exception_remedies(facts, failure)
    fix = loader_remedy(run.get("loader"))
    yield Finding(
        id="run.exception",
        severity=Severity.ERROR,
        title=title,
        explanation=f"{raised['type']} raised" + (f" at {stacks.frame_text(fault)}" if fault else "") + f"; classified as {failure.kind}" + (f" ({failure.named})" if failure.named else "") + "."
        + "".join(f" {line[0].upper()}{line[1:]}." for line in evidence["loader"]),
        evidence=evidence,
        remedies=((fix,) if fix else ()) + remedies,
    )


@check("run.shadowed-module", "The failing process imported a local file or folder in place of the library of its name", requires=("run",))
def shadowed_module(facts: Mapping[str, Any]) -> Iterable[Finding]:
    """Seen in the process itself (target/audit.py): the module its exception is about came from a
    file that hides another of the same name further down its sys.path."""
    view = view_of(facts, RunView)
    shadow = view.shadowing()
    if view.ending_kind != "exit" or shadow is None:
        return
    module, ran, hidden = (shadow[k] for k in SHADOWING_KEYS)
    if stacks.PACKAGES.search(ran):
        return  # two installed copies (the user site before the venv): not a local file to rename
    raised = view.record["exception"]
    local = os.path.dirname(ran) if os.path.basename(ran).startswith("__init__.") else ran
    yield Finding(
        id="run.shadowed-module",
        severity=Severity.ERROR,
        title=f"import {module} ran {local}, not the library it hides ({hidden})",
        explanation=f"The process that died of {raised.get('type') or 'an exception'} about {module} had imported it from {ran}: "
        f"its folder comes earlier on that process's sys.path than {hidden}, so every name the library defines and {local} does not is missing.",
        evidence={"module": module, "file": ran, "hides": hidden, "exception": first_line(str(raised.get("message") or ""))},
        remedies=shadow_remedies(facts, module, local),
    )


@check("run.error-message", "A failure the output names in the stack's own words, where no exception ended the command", requires=("run",))
def error_message(facts: Mapping[str, Any]) -> Iterable[Finding]:
    """A run that died by a signal, hung, or exited without a traceback (a fatal error of the
    interpreter, a native library's abort) is read through the same table of messages as exceptions."""
    view = view_of(facts, RunView)
    run = view.record
    kind = ending_kind(facts)
    if kind not in ("signal", "exit", "hang") or (kind == "exit" and run.get("exception")):
        return
    lines = view.output_lines()
    known = matching("\n".join(lines))
    if known is None:
        return
    hits = [line.strip() for line in lines if known.pattern.search(line)]
    said = hits[-1] if hits else known.cause  # a pattern that spans lines matches none alone
    python = view_of(facts, TargetView).executable
    yield Finding(
        id="run.error-message",
        severity=Severity.ERROR,
        title=f"The output names the failure: {known.cause}",
        explanation=f"The command's output says: {said[:300]}",
        evidence={"kind": known.kind, "line": said[:300], "named": known.named("\n".join(lines)), "sources": list(known.sources), "loader": loader_lines(run.get("loader"))},
        remedies=tuple(r for r in (loader_remedy(run.get("loader")),) if r) + table_remedy(known, python),
    )


def recursion_of(run: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    """The deepest recursion on the crashed thread's stacks (Python's, else the stopped native one's)."""
    thread = stacks.crashed_thread(run.get("python_stacks")) or {}
    native = [t for t in (run.get("native_stacks") or {}).get("threads", ()) if t.get("stopped")]
    frames = list(thread.get("frames") or ()) + list(thread.get("native_frames") or ()) + list(native[0]["frames"] if native else ())
    return bounds.deepest_recursion([f for f in frames if isinstance(f, Mapping)])


@check("run.deep-recursion", "A native crash on a stack that one recursion filled", requires=("run",))
def deep_recursion(facts: Mapping[str, Any]) -> Iterable[Finding]:
    view = view_of(facts, RunView)
    run = view.record
    if view.ending_kind != "signal" or view.ending["signal_name"] not in NATIVE_CRASHES:
        return
    marker = recursion_of(run)
    if marker is None or marker["repeated"] < RECURSION_DEPTH:
        return
    yield Finding(
        id="run.deep-recursion",
        severity=Severity.ERROR,
        title=f"A recursion overflowed the C stack: {marker['function']}",
        explanation=(
            f"The thread that died was deep in one recursion ({marker['function']}; the dump shows only its innermost frames). "
            "Each Python call also takes C stack; with sys.setrecursionlimit raised past what the thread's stack holds, "
            "the interpreter crashes with SIGSEGV instead of raising RecursionError."
        ),
        evidence={"recursion": marker["function"], "repeated_at_least": marker["repeated"]},
        remedies=(
            Remedy("Make the recursion iterative (an explicit stack or a loop), or keep sys.setrecursionlimit at a depth the stack holds."),
            Remedy("Where deep recursion is meant, run it in a thread with a larger stack: threading.stack_size(512 * 1024 * 1024) before starting the thread."),
        ),
    )


PICKLED = (".pkl", ".pickle", ".pt", ".pth")


def unplaced(frame: Mapping[str, Any]) -> bool:
    """Code this machine cannot place: its source file does not exist here, or the interpreter could not
    read its line (faulthandler's `line ???`, which a code object of another Python's layout gives)."""
    return frame.get("exists") is False or (frame.get("line") is None and frame.get("file") != bounds.MARKER_FILE)


@check("run.foreign-code", "A native crash in code that is not on this machine, with pickles the program opened", requires=("run",))
def foreign_code(facts: Mapping[str, Any]) -> Iterable[Finding]:
    """Code whose source file does not exist here runs because something unpickled it; a function
    cloudpickled by another Python version crashes the interpreter when called. The files the program
    opened name where it came from, whether or not the model inspector reads them."""
    view = view_of(facts, RunView)
    run = view.record
    if ending_kind(facts) != "signal":
        return
    thread = stacks.crashed_thread(run.get("python_stacks")) or {}
    strange = next((f for f in thread.get("frames") or () if unplaced(f)), None)
    opened = run.get("opened_files") if isinstance(run.get("opened_files"), list) else []
    pickles = [p for p in opened if str(p).lower().endswith(PICKLED)]
    if strange is None or not pickles:
        return
    yield Finding(
        id="run.foreign-code",
        severity=Severity.ERROR,
        title=f"The crash is in {stacks.frame_text(strange)}, code that is not on this machine, unpickled from a file the program opened ({os.path.basename(pickles[-1])})",
        explanation=(
            f"The crashing thread runs {stacks.frame_text(strange)}, code this machine cannot place (its file is not here, or its line cannot be read): the function was unpickled. "
            f"The program opened {', '.join(pickles[:5])}. A function cloudpickled under another Python version carries that version's bytecode, "
            "which crashes this interpreter when it runs."
        ),
        evidence={"frame": stacks.frame_text(strange), "opened": pickles[:20]},
        remedies=(
            Remedy("Load the file with the Python minor that wrote it, or save plain data (numbers, state_dict tensors) instead of functions and objects with code."),
            Remedy("For SB3, replace the pickled schedules when loading: custom_objects={'learning_rate': 0.0, 'lr_schedule': lambda _: 0.0, 'clip_range': lambda _: 0.0}"),
        ),
    )
