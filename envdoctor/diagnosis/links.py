"""The linking rules: each ties a failure that was seen to the finding that explains it.

Each is small and pure: it reads the run's or the probe's record and the first pass's findings, and
yields a Cause naming the root finding with the evidence that links the two. Facts behind them: a
cloudpickled function from another Python segfaults when SB3 calls it (docs/sb3-allowlist-sources.md),
GPU out-of-memory surfacing as a segfault in native code (PhysX), and the probe's bisection variables.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, List, Mapping, Sequence, Tuple

from envdoctor.crash import stacks
from envdoctor.diagnosis import link
from envdoctor.diagnosis.evidence import all_of, cause, first, run_failed, run_of, signal_name, symptom
from envdoctor.facts.run_describe import amount
from envdoctor.facts.run_growth import peak_share
from envdoctor.failures import classify_exception
from envdoctor.knowledge.errors import by_kind
from envdoctor.model import Cause, Finding, Severity

SB3_CODE = ("/stable_baselines3/", "/sb3_contrib/")
# Which finding explains an exception of a kind the error table has no row for; the table's rows
# name their own (knowledge/errors.csv).
UNLISTED_CAUSES = {"missing-module": ("sb3.missing-module", "imports.failed")}
# Which finding a bisection variation points at when it makes the failure go away.
VARIATION_CAUSES = {
    "single-thread": ("threads.multiple-openmp", "conda.openmp-mixed", "threads.kmp-duplicate-lib-ok", "threads.oversubscribed", "wsl.kernel"),
    "no-cuda": ("cuda.driver-too-old", "cuda.gpu-arch-unsupported", "wheels.mixed-cuda-families", "wsl.linux-driver-inside"),
    "aten-cpu-default": ("cpu.missing-instructions",),
    "no-ld-overrides": ("cuda.library-shadowing",),
    "mkl-gnu-threading": ("threads.multiple-openmp", "conda.openmp-mixed"),
    "no-pythonpath": ("imports.shadowed",),
    "no-user-site": ("imports.shadowed",),
}
# Which static findings can make each probe stage crash, most telling first.
STAGE_CAUSES = {
    "import_numpy": ("cpu.missing-instructions", "numpy.abi-mismatch", "numpy.too-old"),
    "import_torch": ("cpu.missing-instructions", "wheels.mixed-cuda-families", "conda.mixed-cuda", "conda.two-torches", "cuda.library-shadowing", "wheels.torch-pins", "conda.cxx-runtime"),
    "cpu_ops": ("threads.multiple-openmp", "conda.openmp-mixed", "threads.kmp-duplicate-lib-ok", "cpu.missing-instructions", "wsl.kernel"),
    "thread_pools": ("threads.multiple-openmp", "conda.openmp-mixed", "threads.oversubscribed"),
    "cuda_init": ("cuda.driver-too-old", "wsl.linux-driver-inside", "wsl.kernel", "wheels.mixed-cuda-families", "cuda.library-shadowing"),
    "cuda_matmul": ("cuda.gpu-arch-unsupported", "cuda.driver-too-old", "gpu.memory-low"),
    "learn": ("threads.multiple-openmp", "conda.openmp-mixed", "memory.shm-small", "memory.low-ram"),
}
SIGNAL_CAUSES = {"SIGILL": ("cpu.missing-instructions",), "SIGBUS": ("memory.shm-small",)}
# Findings that blame a shortage of host memory without measuring the run: weighed against its peak.
SHORT_OF_MEMORY = ("memory.low-ram",)
HALF = 0.5


def crashed_frames(facts: Mapping[str, Any]) -> List[dict]:
    thread = stacks.crashed_thread(run_of(facts).record.get("python_stacks"))
    return list((thread or {}).get("frames") or ())


def foreign(frame: Mapping[str, Any]) -> bool:
    """Code whose source file is not on this machine: pickled elsewhere (or a file deleted since).
    A pseudo-file (`<string>`) or a frame recorded before frames said so (exists None) is not foreign."""
    return frame.get("exists") is False


def pickled_functions(finding: Finding) -> List[Tuple[str, str]]:
    """(function name, source file name) of each function in the model that can crash here."""
    rows = [r for r in finding.evidence.get("functions", ()) if r.get("effect") == "crash-risk"]
    return [(str(r.get("qualname", "")).rsplit(".", 1)[-1], os.path.basename(str(r.get("filename") or ""))) for r in rows]


def runs_pickled(frame: Mapping[str, Any], functions: Sequence[Tuple[str, str]]) -> bool:
    """The frame runs one of the model's functions: its name and source file name are the pickled code's."""
    return (frame.get("function"), os.path.basename(str(frame.get("file", "")))) in functions


def model_code_links(frames: Sequence[dict], finding: Finding, opened: Sequence[str]) -> Tuple[str, List[str]]:
    """How strongly the crashing frames tie the crash to the model's pickled code, and the lines that say so."""
    functions = pickled_functions(finding)
    running = [f for f in frames if runs_pickled(f, functions)]
    strange = [f for f in frames if foreign(f)]
    sb3 = next((f for f in frames if any(part in f.get("file", "").replace("\\", "/") for part in SB3_CODE)), None)
    lines = []
    if running:
        lines.append(f"the crashing thread runs {stacks.frame_text(running[0])}, a function this model pickled")
    if strange:
        lines.append(f"the crashing thread runs {stacks.frame_text(strange[0])}, from a file that does not exist on this machine")
    if sb3:
        lines.append(f"called from SB3's {stacks.frame_text(sb3)}")
    model = str(finding.evidence.get("model", ""))
    read = "the program opened" if os.path.abspath(model) in opened or model in opened else "the command names"
    lines.append(f"{read} {model}: {finding.title}")
    confidence = "confirmed" if running else "likely" if strange or sb3 else "possible"
    return confidence, lines


@link("model-code-crash", "A native crash in code that a model file pickled under another Python")
def model_code_crash(facts: Mapping[str, Any]) -> Iterable[Cause]:
    run = run_of(facts)
    if run.ending_kind != "signal":
        return
    frames = crashed_frames(facts)
    recorded = run.record.get("opened_files")
    opened = [str(p) for p in recorded] if isinstance(recorded, list) else []
    for finding in all_of(facts, "sb3.foreign-bytecode"):
        if pickled_functions(finding):
            confidence, lines = model_code_links(frames, finding, opened)
            yield cause(finding, confidence, lines, "model-code-crash")


def explaining(kind: str) -> Tuple[str, ...]:
    """The findings that explain a failure of `kind`, most specific first."""
    known = by_kind(kind)
    return known.findings if known else UNLISTED_CAUSES.get(kind, ())


def memory_unused(facts: Mapping[str, Any]) -> str:
    """Why a shortage of host memory cannot be blamed without more: the run's processes stayed under half
    of every memory limit (another process may still have taken the rest); "" when they did not, or the
    run recorded no peak."""
    peak = peak_share((run_of(facts).record or {}).get("memory") or {})
    if peak is None or peak[2] >= HALF:
        return ""
    name, used, share = peak
    return f"the command's processes peaked at {amount(used)}, {share:.0%} of the {name} limit: nothing it recorded shows memory running out"


def exception_cause(facts: Mapping[str, Any], kind: str, said: Finding, rule: str) -> Cause:
    """The finding that explains an exception of `kind`, or the exception's own finding, as sure as
    its message makes it: a message that states its cause, or an exception raised by the program's own
    code with nothing in the environment behind it, is confirmed."""
    explained = first(facts, *explaining(kind))
    unused = memory_unused(facts) if explained is not None and explained.id in SHORT_OF_MEMORY else ""
    if unused:  # the message names a class of causes; this one is not borne out by the run
        explained = None
    raised, message = said.evidence.get("type"), said.evidence.get("message")
    line = f"it failed with {raised}" + (f": {message}" if message else "") if raised else f"it failed: {said.title}"
    worker = said.evidence.get("worker_exception")
    if worker:
        crashed = f" {said.evidence['worker_crashed']}" if said.evidence.get("worker_crashed") else ""
        at = f" at {said.evidence['at']}" if said.evidence.get("at") else ""
        line = f"a worker process died of {worker}{crashed}; then the main process failed with {raised}{at}, its pipe to the worker closed"
    loader = [str(text) for text in said.evidence.get("loader") or ()]
    known = by_kind(kind)
    if explained is not None and explained is not said:
        # As sure as the message is: one that names a class of causes (a worker that died) makes a
        # finding of that class likely, not proven.
        confidence = known.confidence if known is not None else "confirmed"
        return cause(explained, confidence, [line, f"classified as {kind}, which {explained.id} explains"] + loader, rule)
    extra = [f"import cycle: {' → '.join(said.evidence['cycle'])}"] if said.evidence.get("cycle") else []
    extra += loader + ([unused] if unused else [])
    if known is not None:
        extra.append(f"the message says: {known.cause}")
        extra += [f"source: {source}" for source in known.sources[:2]]
        return cause(said, known.confidence, [line] + extra, rule)
    if said.evidence.get("own_code"):
        return cause(said, "confirmed", [line, f"raised by the program's own code at {said.evidence.get('at')}; nothing in the environment is implicated"], rule)
    if kind == "worker-error":
        return cause(said, "confirmed", [line, "the worker's own traceback, printed before the main process's, says where it raised"], rule)
    if kind == "worker-crash":
        return cause(said, "confirmed", [line, "the worker's Python stack, written by faulthandler as it died, says where"], rule)
    where = [f"raised at {said.evidence['at']}"] if said.evidence.get("at") else []
    return cause(said, "likely", [line] + where + extra, rule)


@link("foreign-code-crash", "A native crash in unpickled code that is not on this machine, and the pickles the program opened")
def foreign_code_crash(facts: Mapping[str, Any]) -> Iterable[Cause]:
    finding = first(facts, "run.foreign-code")
    if finding is not None and not all_of(facts, "sb3.foreign-bytecode"):
        yield cause(finding, "likely", [finding.title, f"the program opened {', '.join(finding.evidence.get('opened') or ())}"], "foreign-code-crash")


@link("exception", "The exception a command or probe stage died of, tied to the finding of its kind")
def exception(facts: Mapping[str, Any]) -> Iterable[Cause]:
    said = first(facts, "run.exception")
    if said is not None:
        yield exception_cause(facts, said.evidence.get("kind", "error"), said, "exception")


@link("error-message", "A failure whose output names its cause, where no exception ended the command")
def error_message(facts: Mapping[str, Any]) -> Iterable[Cause]:
    """The output's message, as sure as the table makes it when the command exited of it; a message
    seen before a signal or a hang is at most likely (the output may hold a warning of something else)."""
    said = first(facts, "run.error-message")
    known = by_kind(said.evidence.get("kind", "")) if said is not None else None
    if said is None or known is None:
        return
    exited = run_of(facts).ending_kind == "exit"
    confidence = known.confidence if exited else ("likely" if known.confidence == "confirmed" else "possible")
    lines = [f"the output says: {said.evidence.get('line')}"] + [str(text) for text in said.evidence.get("loader") or ()]
    explained = first(facts, *known.findings)
    if explained is not None:
        yield cause(explained, confidence, lines + [f"classified as {known.kind}, which {explained.id} explains"], "error-message")
    else:
        yield cause(said, confidence, lines + [f"source: {source}" for source in known.sources[:2]], "error-message")


@link("deep-recursion", "A native crash on a stack one recursion filled")
def deep_recursion(facts: Mapping[str, Any]) -> Iterable[Cause]:
    finding = first(facts, "run.deep-recursion")
    if finding is not None:
        yield cause(finding, "likely", [finding.title], "deep-recursion")


@link("shadowed-module", "An exception about a module that the failing process imported from a local file hiding the library")
def shadowed_module(facts: Mapping[str, Any]) -> Iterable[Cause]:
    """Confirmed: the process itself said which file it imported, and what that file hid."""
    finding = first(facts, "run.shadowed-module")
    if finding is not None:
        evidence = finding.evidence
        yield cause(finding, "confirmed", [f"the failing process imported {evidence.get('module')} from {evidence.get('file')}, which hides {evidence.get('hides')}"], "shadowed-module")


@link("gpu-out-of-memory", "A crash or error right after the GPU's memory filled")
def gpu_out_of_memory(facts: Mapping[str, Any]) -> Iterable[Cause]:
    finding = first(facts, "run.gpu-out-of-memory")
    if finding is None or not run_failed(facts):
        return
    said = finding.evidence.get("output_line")
    lines = list(finding.evidence.get("near_full") or ()) + ([f"the output says: {said}"] if said else [])
    yield cause(finding, "confirmed" if said else "likely", lines, "gpu-out-of-memory")


@link("host-out-of-memory", "An OOM kill or failed allocation and the memory limit that was reached")
def host_out_of_memory(facts: Mapping[str, Any]) -> Iterable[Cause]:
    finding = first(facts, "run.out-of-memory")
    if finding is None:
        return
    signs = list(finding.evidence.get("signs") or ())
    counted = any("OOM kill" in s or "kernel log" in s for s in signs)
    grew = first(facts, "run.memory-growth")
    yield cause(finding, "confirmed" if counted else "likely", signs + ([grew.title] if grew else []), "host-out-of-memory")


@link("memory-growth", "A failure after the process tree's memory grew steadily into a limit: a leak that ends in a crash or an OOM")
def memory_growth(facts: Mapping[str, Any]) -> Iterable[Cause]:
    """Growth is a cause only with a limit in sight (reached, or the series ended near one), or, for a
    failure other than a signal, when it went on well past start-up; a segfault is never blamed on
    growth that stayed far from every limit."""
    finding = first(facts, "run.memory-growth")
    if finding is None or not run_failed(facts):
        return
    evidence = finding.evidence
    died = run_of(facts).ending_kind == "signal"
    if finding.severity is Severity.ERROR or evidence.get("near_limit"):
        confidence = "likely"
    elif evidence.get("sustained") and not died:
        confidence = "possible"
    else:
        return
    yield cause(finding, confidence, [finding.title] + ([finding.explanation] if finding.explanation else []), "memory-growth")


def bisected_cause(facts: Mapping[str, Any], finding: Finding, passing: Sequence[str], rule: str) -> Cause:
    """The finding the passing variation points at, confirmed by the re-run; else the bisection itself."""
    line = f"re-run with only {', '.join(passing)} changed, the failure goes away"
    for name in passing:
        explained = first(facts, *VARIATION_CAUSES.get(name, ()))
        if explained is not None:
            return cause(explained, "confirmed", [line, f"{explained.id}: {explained.title}"], rule)
    return cause(finding, "confirmed", [line], rule)


@link("bisected", "A single environment change that made the failure go away, and the finding it points at")
def bisected(facts: Mapping[str, Any]) -> Iterable[Cause]:
    for finding in all_of(facts, "run.bisected"):
        passing = list(finding.evidence.get("passing") or ())
        if passing:
            yield bisected_cause(facts, finding, passing, "bisected")
    for finding in all_of(facts, "probe.bisected"):
        passing = [name for name, outcome in (finding.evidence.get("tried") or {}).items() if outcome == "passed"]
        if passing:
            yield bisected_cause(facts, finding, passing, "bisected")


@link("signal-meaning", "A signal whose meaning points at a finding: SIGILL and the CPU, SIGBUS and /dev/shm")
def signal_meaning(facts: Mapping[str, Any]) -> Iterable[Cause]:
    name = signal_name(facts) or ((facts.get("probe") or {}).get("signal"))
    explained = first(facts, *SIGNAL_CAUSES.get(name or "", ()))
    if explained is not None:
        yield cause(explained, "likely", [f"the process died of {name}", f"{explained.id}: {explained.title}"], "signal-meaning")


@link("probe-stage", "A probe stage that crashed or hung, and a static finding known to break that stage")
def probe_stage(facts: Mapping[str, Any]) -> Iterable[Cause]:
    for seen in all_of(facts, "probe.crash", "probe.hang"):
        stage = seen.evidence.get("stage")
        explained = first(facts, *STAGE_CAUSES.get(stage or "", ()))
        if explained is not None:
            yield cause(explained, "likely", [seen.title, f"{explained.id} is known to break the stage '{stage}': {explained.title}"], "probe-stage")


@link("deadlock", "A hang whose threads wait on each other's locks")
def deadlock(facts: Mapping[str, Any]) -> Iterable[Cause]:
    finding = first(facts, "run.deadlock")
    if finding is not None:
        yield cause(finding, "likely", [finding.title], "deadlock")


@link("probe-failure", "A probe stage's failure, tied to the static finding of its kind")
def probe_failure(facts: Mapping[str, Any]) -> Iterable[Cause]:
    for finding in all_of(facts, "probe.import-error", "probe.stage-failed", "probe.circular-import"):
        error = {"type": finding.evidence.get("type"), "message": finding.evidence.get("message") or ""}
        failure = classify_exception(error)
        kind = "circular-import" if finding.id == "probe.circular-import" else failure.kind
        explained = first(facts, *[i for i in explaining(kind) if i != finding.id])
        if explained is not None:
            yield cause(explained, "likely", [f"{finding.title}", f"classified as {kind}, which {explained.id} explains"], "probe-failure")
        else:
            yield cause(finding, "likely", [finding.explanation or finding.title], "probe-failure")


@link("model-verdict", "A model file that will fail when loaded here, with no failure seen yet")
def model_verdict(facts: Mapping[str, Any]) -> Iterable[Cause]:
    if symptom(facts) is not None:
        return
    for finding in facts.get("findings") or ():
        if finding.domain == "sb3" and finding.severity is Severity.ERROR:
            said = (finding.explanation or finding.title).split(". ")[0][:300]
            yield cause(finding, "likely", [f"{finding.evidence.get('model', '')}, read without running it: {said}"], "model-verdict")
