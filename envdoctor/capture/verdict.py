"""Verdicts about one run of the command: pure functions from the report's `run` section to findings.

Each says how the command ended, where (which thread, which frame), and, when the memory record
supports it, why: the OOM killer, a memory limit, or a GPU that was full just before a segfault.
Facts behind the OOM rules: knowledge notes (domain-facts.md), "GPU OOM reported as a segfault
(Isaac Gym / PhysX)" and the memory section.
"""

from __future__ import annotations

import re
import shlex
from typing import Iterable, List, Optional

from envdoctor.capture import stacks
from envdoctor.capture.record import output_lines
from envdoctor.model import Finding, Remedy, Severity

GPU_FULL_FRACTION = 0.95
LIMIT_REACHED_FRACTION = 0.9
BEFORE_DEATH_S = 5.0
NATIVE_CRASHES = ("SIGSEGV", "SIGABRT", "SIGBUS")
HOST_OOM_TEXT = re.compile(r"\bMemoryError\b|Cannot allocate memory|std::bad_alloc|can't allocate memory|out of memory", re.IGNORECASE)
GPU_OOM_TEXT = re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|PxgCudaDeviceMemoryAllocator fail to allocate|Failed to allocate pinned memory")
ERROR_LINE = re.compile(r"^(?:[\w.]+(?:Error|Exception|Interrupt|Exit)\b|RuntimeError|Error:|error:|FATAL|Fatal)")
PHYSX_REFERENCE = "https://github.com/isaac-sim/OmniIsaacGymEnvs/issues/11"


def mib(n: Optional[int]) -> str:
    return "?" if n is None else f"{n / 2 ** 20:.0f} MiB"


def judge(run: dict) -> List[Finding]:
    """Every verdict about this run, most telling first."""
    findings: List[Finding] = []
    for rule in (ended, out_of_memory, gpu_out_of_memory, left_behind):
        findings.extend(rule(run))
    return sorted(findings, key=lambda f: -f.severity.rank)


def ended(run: dict) -> Iterable[Finding]:
    kind = run["ending"]["kind"]
    if kind == "signal":
        yield crashed(run)
    elif kind == "hang":
        yield hung(run)
    elif kind == "exit":
        yield exited(run)
    elif kind == "interrupted":
        yield interrupted(run)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "es" if noun.endswith("s") else "s")


def forwarding(run: dict) -> List[str]:
    """Each signal the doctor forwarded and how many processes it reached, e.g. "SIGTERM forwarded to 3 processes"."""
    end = run["ending"]
    return [f"{name} forwarded to {plural(reached, 'process')}" for name, reached in zip(end.get("forwarded_signals", ()), end.get("forwarded_to", ()))]


def left_behind_text(run: dict) -> Optional[str]:
    """e.g. "2 processes still ran after the command ended and were stopped: 4242 sleep 1000 (SIGTERM); ..."."""
    left = run.get("left_behind") or []
    if not left:
        return None
    named = "; ".join(f"{p['pid']} {p['cmdline'] or p['name']} ({p['ended_by']})" for p in left)
    return f"{plural(len(left), 'process')} still ran after the command ended and {'was' if len(left) == 1 else 'were'} stopped: {named}"


def aftermath(run: dict) -> List[str]:
    """What the doctor did to the command's processes, one line each: signals it forwarded, processes it stopped."""
    stopped = left_behind_text(run)
    return forwarding(run) + ([stopped] if stopped else [])


def interrupted(run: dict) -> Finding:
    end = run["ending"]
    signals = ", ".join(end["forwarded_signals"])
    return Finding(
        id="run.interrupted",
        severity=Severity.INFO,
        title=f"The command was interrupted by {signals} after {run['duration_s']:.1f} s; " + "; ".join(forwarding(run)),
        explanation="The signal came from outside (Ctrl-C, a job scheduler, a container runtime) and was passed on to the command's process group and to every worker that had left it.",
        evidence={"forwarded_signals": end["forwarded_signals"], "forwarded_to": end.get("forwarded_to", [])},
    )


def where(run: dict) -> str:
    """e.g. " in the worker thread running capture_frames (grab.py:14), at grab (camera/__init__.py:2) inside
    string_at (ctypes/__init__.py:519)": the frame at fault first, then where it surfaced."""
    thread = stacks.crashed_thread(run.get("python_stacks"))
    if not thread:
        return ""
    text = f" in the {stacks.thread_label(thread)}"
    if thread["frames"]:
        top, fault = thread["frames"][0], stacks.frame_at_fault(thread["frames"])
        text += f", at {stacks.frame_text(fault)}" + ("" if fault is top else f" inside {stacks.frame_text(top)}")
    native = native_top(thread, run)
    if native:
        text += f"; native frame: {native}"
    return text


def native_top(thread: Optional[dict], run: dict) -> Optional[str]:
    frames = (thread or {}).get("native_frames")
    if not frames:
        stopped = [t for t in (run.get("native_stacks") or {}).get("threads", ()) if t.get("stopped")]
        frames = stopped[0]["frames"] if stopped else None
    if not frames:
        return None
    top = frames[0]
    return top["function"] + (f" ({top['location']})" if top.get("location") else "")


def crashed(run: dict) -> Finding:
    end = run["ending"]
    name = end["signal_name"]
    thread = stacks.crashed_thread(run.get("python_stacks"))
    remedies = [Remedy("Any native-crash cause envdoctor knows in this environment is among this report's findings; re-check after a change with:", "envdoctor check")]
    if not run.get("under_gdb") and name in NATIVE_CRASHES + ("SIGILL", "SIGFPE"):
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


def hung(run: dict) -> Finding:
    threads = (run.get("python_stacks") or {}).get("threads", [])
    waiting = "; ".join(f"{stacks.thread_label(t)} waits in {t['frames'][0]['function']} ({stacks.short(t['frames'][0]['file'])}:{t['frames'][0]['line']})" for t in threads if t["frames"])
    return Finding(
        id="run.hang",
        severity=Severity.ERROR,
        title=f"The command printed nothing for {run['hang_timeout_s']:g} s and was ended as hung after {run['duration_s']:.1f} s",
        explanation=("Every thread's stack at that moment: " + waiting + ".") if waiting else "No Python stack was written (not a Python process, or faulthandler was off).",
        evidence={"hang_timeout_s": run["hang_timeout_s"], "threads": len(threads)},
        remedies=(
            Remedy("Read the top frame of each thread: a lock, a queue or a join waits for a thread or worker process that died or is itself blocked."),
            Remedy("For native frames of the hung threads, re-run under gdb:", "envdoctor run --gdb --hang-timeout " + f"{run['hang_timeout_s']:g} -- " + shlex.join(run["command"])),
        ),
    )


def exited(run: dict) -> Finding:
    status = run["ending"]["exit_status"]
    errors = [line for line in output_lines(run, "stderr") if ERROR_LINE.match(line.strip())]
    last = errors[-1].strip() if errors else None
    return Finding(
        id="run.exit-status",
        severity=Severity.WARNING,
        title=f"The command exited with status {status} after {run['duration_s']:.1f} s" + (f": {last}" if last else ""),
        explanation="It ended by itself (no signal); the output's last lines below say why.",
        evidence={"exit_status": status, "last_error_line": last},
    )


def left_behind(run: dict) -> Iterable[Finding]:
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


def memory_evidence(run: dict) -> List[str]:
    """Each independent sign that the command ran out of host memory."""
    memory, end = run["memory"], run["ending"]
    signs = []
    for cgroup in memory.get("cgroups", ()):
        if cgroup.get("oom_kills_during_run"):
            signs.append(f"the memory cgroup {cgroup['path']} (limit {mib(cgroup.get('limit_bytes'))}) counted {cgroup['oom_kills_during_run']} OOM kill(s) during the run")
    if memory.get("kernel_oom_lines"):
        signs.append("the kernel log says: " + memory["kernel_oom_lines"][-1])
    last = (memory.get("samples") or [{}])[-1]
    limit = memory.get("address_space_limit_bytes")
    text_hits = [line.strip() for line in output_lines(run) if HOST_OOM_TEXT.search(line) and not GPU_OOM_TEXT.search(line)]
    if limit and text_hits:
        signs.append(f"allocation failed ({text_hits[-1]}) under an address-space limit (RLIMIT_AS) of {mib(limit)}; the largest process had mapped {mib(last.get('vms_max_bytes'))}")
    elif text_hits:
        signs.append(f"the output reports a failed allocation: {text_hits[-1]}")
    if end["signal_name"] == "SIGKILL":
        for cgroup in memory.get("cgroups", ()):
            if cgroup.get("limit_bytes") and (memory.get("peak_rss_bytes") or 0) >= LIMIT_REACHED_FRACTION * cgroup["limit_bytes"]:
                signs.append(f"it was killed with RSS at {mib(memory['peak_rss_bytes'])} of its cgroup's {mib(cgroup['limit_bytes'])} limit")
    return signs


def out_of_memory(run: dict) -> Iterable[Finding]:
    if run["ending"]["kind"] not in ("signal", "exit"):
        return
    signs = memory_evidence(run)
    if not signs:
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


def gpu_near_full(run: dict) -> List[str]:
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


def gpu_out_of_memory(run: dict) -> Iterable[Finding]:
    end = run["ending"]
    if end["kind"] not in ("signal", "exit"):
        return
    full = gpu_near_full(run) if end["signal_name"] in NATIVE_CRASHES else []
    said = [line.strip() for line in output_lines(run) if GPU_OOM_TEXT.search(line)]
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
