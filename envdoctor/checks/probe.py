"""Judging the probe ladder's recorded result: crashes, hangs, failed imports, circular imports,
and bisected remedies.

Pure: everything comes from facts["probe"], so `check --from` re-judges a recorded probe.
Facts: docs/knowledge/sb3-model-files.md §1, §6 (the probe, "construct" imports torch._dynamo).
"""

from __future__ import annotations

import os
import shlex
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple

from envdoctor.checks import check
from envdoctor.checks.imports import inside, location_of, shadow_remedies, shadowing_path
from envdoctor.crash import signals, stacks
from envdoctor.facts import view_of
from envdoctor.facts.probe import probe_of
from envdoctor.facts.target import TargetView
from envdoctor.model import Finding, Remedy, Severity
from envdoctor.probe.result import Ending, ProbeResult, StageResult, StageStatus
from envdoctor.probe.variations import BY_NAME

IMPORT_STAGES = ("import_numpy", "import_torch", "import_gymnasium", "import_sb3", "import_sb3_contrib")
STAGE_HINTS = {
    "maskable_ppo": "Constructing the first model imports torch._dynamo (torch.optim.Optimizer does); a failure there is a torch / Python-version mismatch, not an SB3 bug.",
    "cuda_init": "CUDA initialisation loads the driver and the CUDA runtime; see the CUDA findings for driver and wheel mismatches.",
    "cpu_ops": "The first matmul loads the BLAS (MKL/OpenBLAS) and OpenMP code paths torch picked for this CPU.",
}
REPORT = Remedy("Attach the JSON report to your bug ticket: it has the stage, the signal and the stack.")


def frames_text(frames) -> list:
    return [f"{f.get('file')}:{f.get('line')} in {f.get('function')}" for f in frames or ()]


def fault_sentence(facts: Mapping[str, Any], frames) -> str:
    """Where the crashed stage died, named by its first frame outside the standard library and the
    ladder (`<string>`, run with -c): the package that crashed, not `ctypes` or `importlib`."""
    frames = [f for f in frames or () if isinstance(f, Mapping) and isinstance(f.get("file"), str)]
    if not frames:
        return ""
    python = facts.get("target", {}).get("python", {}) if isinstance(facts.get("target"), Mapping) else {}
    fault = stacks.frame_at_fault(frames, python.get("stdlib_paths") or (), own=("<string>",))
    return f"It died in {stacks.frame_text(fault)}."


def bisect_pointer(probe: ProbeResult) -> tuple:
    if probe.bisection and probe.bisection.passing:
        return (Remedy("Apply the setting that bisection found (see probe.bisected)."),)
    return ()


@check("probe.crash", "A probe stage killed the process (SIGSEGV, SIGILL, SIGBUS, SIGABRT, ...)", requires=("probe",))
def crash(facts: Mapping[str, Any]) -> Iterable[Finding]:
    probe = probe_of(facts)
    fatal = probe.fatal
    if fatal is None and probe.ending in (Ending.SIGNAL, Ending.EXIT):
        yield after_the_last_stage(probe)
    if fatal is None or fatal.status.out_of_time:
        return
    record = fatal.crash or {}
    signal = record.get("signal")
    how = f"was killed by {signal}" if signal else f"exited with code {record.get('returncode')}"
    meaning = signals.stage_meaning(signal)
    yield Finding(
        id="probe.crash",
        severity=Severity.ERROR,
        title=f"The probe {how} in stage '{fatal.title}'",
        explanation=" ".join(filter(None, [f"{signal or 'The exit'} here means {meaning}.", fault_sentence(facts, record.get("frames")), STAGE_HINTS.get(fatal.id, "")])),
        evidence={
            "stage": fatal.id,
            "signal": signal,
            "returncode": record.get("returncode"),
            "fatal_error": record.get("fatal_error"),
            "innermost_frames": frames_text(record.get("frames"))[:6],
        },
        remedies=bisect_pointer(probe) + (REPORT,),
    )


def after_the_last_stage(probe: ProbeResult) -> Finding:
    """Every stage reported its end, yet the process died: a thread a stage left behind, or the exit itself."""
    how = f"was killed by {probe.signal}" if probe.signal else f"exited with code {probe.returncode}"
    return Finding(
        id="probe.crash",
        severity=Severity.ERROR,
        title=f"The probe {how} after its last stage",
        explanation="Every stage finished, so the crash came from a thread a stage left running (an OpenMP, CUDA or loader worker) or from the process's exit.",
        evidence={"signal": probe.signal, "returncode": probe.returncode, "output_tail": probe.output_tail[-1000:]},
        remedies=(REPORT,),
    )


@check("probe.hang", "A probe stage ran past its time limit: slow (still using CPU) or hung", requires=("probe",))
def hang(facts: Mapping[str, Any]) -> Iterable[Finding]:
    probe = probe_of(facts)
    fatal = probe.fatal
    if fatal is None or not fatal.status.out_of_time:
        return
    record = fatal.crash or {}
    slow = fatal.status is StageStatus.SLOW or bool(record.get("still_working"))
    hint = " " + STAGE_HINTS[fatal.id] if fatal.id in STAGE_HINTS else ""
    not_bisected = "" if probe.bisection else " It was not bisected: every re-run would wait out the same limit."
    yield Finding(
        id="probe.hang",
        severity=Severity.WARNING if slow else Severity.ERROR,
        title=f"The probe stage '{fatal.title}' was {fatal.reason}" if slow else f"The probe hung in stage '{fatal.title}' ({fatal.reason})",
        explanation=(SLOW if slow else HUNG) + hint + not_bisected,
        evidence={"stage": fatal.id, "cpu_s": record.get("cpu_s"), "waiting_in": frames_text(record.get("frames"))[:6], "threads": record.get("threads")},
        remedies=bisect_pointer(probe) + time_limit_remedies(probe, slow) + (REPORT,),
    )


SLOW = (
    "The stage kept using CPU until its time limit ended it, so it was working, not stuck: a slow machine, a cold "
    "disk cache or an oversubscribed CPU. The stack shows where it was."
)
HUNG = (
    "The stage used no CPU before its time limit ended it: a stage that never returns is most often a deadlock between "
    "thread pools (two OpenMP runtimes, a fork after threads started) or a driver call that waits forever. The stack "
    "shows where it waited."
)


def time_limit_remedies(probe: ProbeResult, slow: bool) -> tuple:
    """Re-checking the same interpreter with more time, and for a hang with one thread per pool."""
    again = f"envdoctor check --python {shlex.quote(probe.python)}"
    more_time = Remedy("Allow it more time:" if slow else "If the machine is only slow, allow more time:", f"{again} --probe-timeout {longer_timeout(probe)}")
    if slow:
        return (more_time,)
    one_thread = Remedy("Check whether thread pools deadlock: run it once with one thread per pool:", f"OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 {again}")
    return (more_time, one_thread)


def longer_timeout(probe: ProbeResult) -> int:
    """A probe timeout well above the run that ran out of time: at least 900 s, else three times it, in hundreds."""
    return max(900, -(-int(3 * probe.duration_s) // 100) * 100)


def error_evidence(stage: StageResult) -> dict:
    error = stage.error or {}
    return {"stage": stage.id, "type": error.get("type"), "message": error.get("message"), "innermost_frames": frames_text(error.get("frames"))[:4]}


def shadowed_origin(facts: Mapping[str, Any], stage: StageResult) -> Optional[Tuple[str, str, str]]:
    """(module, the local file or folder it was imported from, the installed distribution's location) when
    a failed import stage's module came from outside the distribution installed for it."""
    origins = (stage.error or {}).get("origins")
    for module, origin in (origins.items() if isinstance(origins, Mapping) else ()):
        location = location_of(facts, str(module))
        if not isinstance(origin, str) or not location:
            continue
        local = origin if os.path.basename(origin.rstrip(os.sep)) == module else shadowing_path(({"file": origin},), str(module), location)
        if local and not inside(local, location):
            return str(module), local, location
    return None


def shadowed_import(facts: Mapping[str, Any], stage: StageResult, module: str, local: str, location: str) -> Finding:
    error = stage.error or {}
    return Finding(
        id="probe.import-error",
        severity=Severity.ERROR,
        title=f"'{stage.title}' fails: {module} is shadowed by {local}, not the installed one in {location}",
        explanation=(
            f"`import {module}` ran {local}, which comes first on sys.path (the working directory or PYTHONPATH), instead of "
            f"the installed {module} in {location}; it then failed with {error.get('type')}: {first_line(error.get('message'))}. "
            "Reinstalling does not help while the local copy is there."
        ),
        evidence={**error_evidence(stage), "shadowed_by": local, "location": location},
        remedies=shadow_remedies(facts, module, local),
    )


@check("probe.import-error", "Importing numpy, torch, gymnasium or SB3 raised an exception", requires=("probe",))
def import_error(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for stage in probe_of(facts).stages:
        error = stage.error or {}
        if stage.status is not StageStatus.FAILED or stage.id not in IMPORT_STAGES or error.get("circular_import"):
            continue
        shadow = shadowed_origin(facts, stage)
        if shadow:
            yield shadowed_import(facts, stage, *shadow)
            continue
        yield Finding(
            id="probe.import-error",
            severity=Severity.ERROR,
            title=f"'{stage.title}' fails: {error.get('type')}: {first_line(error.get('message'))}",
            explanation="The package is installed but cannot be imported; everything that needs it fails the same way.",
            evidence=error_evidence(stage),
            remedies=(Remedy("Reinstall it in this environment and read the message above for the library it needs."),),
        )


@check("probe.stage-failed", "A probe stage after the imports raised an exception", requires=("probe",))
def stage_failed(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for stage in probe_of(facts).stages:
        if stage.status is not StageStatus.FAILED or stage.id in IMPORT_STAGES:
            continue
        error = stage.error or {}
        yield Finding(
            id="probe.stage-failed",
            severity=Severity.ERROR,
            title=f"Stage '{stage.title}' fails: {error.get('type')}: {first_line(error.get('message'))}",
            explanation=STAGE_HINTS.get(stage.id, "The stack imports, but this step of real use fails."),
            evidence=error_evidence(stage),
            remedies=(REPORT,),
        )


def first_line(text: Optional[str]) -> str:
    return (text or "").strip().splitlines()[0][:200] if (text or "").strip() else ""


@check("probe.circular-import", "A package is imported while it is still half-initialised (circular import)", requires=("probe",))
def circular_import(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for stage in probe_of(facts).stages:
        circular = (stage.error or {}).get("circular_import")
        if not circular:
            continue
        distribution = circular.get("distribution") or {}
        package = circular["package"]
        location = location_of(facts, distribution.get("distribution") or package)
        local = shadowing_path((stage.error or {}).get("frames") or (), package, location or "")
        yield shadowed_package(facts, stage, circular, local, location) if local else circular_finding(facts, stage, circular)


def shadowed_package(facts: Mapping[str, Any], stage: StageResult, circular: Mapping[str, Any], local: str, location: str) -> Finding:
    """The half-initialised module is a local file or folder, not the installed distribution's: it is the cause."""
    distribution, package = circular.get("distribution") or {}, circular["package"]
    installed = f"{distribution.get('distribution') or package} {distribution.get('version') or ''}".strip()
    return Finding(
        id="probe.circular-import",
        severity=Severity.ERROR,
        title=f"{package} is shadowed by {local}: '{stage.title}' runs it instead of the installed {installed}",
        explanation=(
            f"The failing module is {local}, outside the installed {installed} in {location}. It comes first on sys.path "
            f"(the working directory or PYTHONPATH), so `import {package}` runs it, and its own `import {package}` finds itself half-initialised."
        ),
        evidence={**error_evidence(stage), "module": circular["module"], "distribution": distribution, "shadowed_by": local, "location": location},
        remedies=shadow_remedies(facts, package, local),
    )


def circular_finding(facts: Mapping[str, Any], stage: StageResult, circular: Mapping[str, Any]) -> Finding:
    distribution, package = circular.get("distribution") or {}, circular["package"]
    version = distribution.get("version")
    cycle = " → ".join(circular.get("cycle") or [])
    finds = f'import importlib.util; print(importlib.util.find_spec("{package}").origin)'
    return Finding(
        id="probe.circular-import",
        severity=Severity.ERROR,
        title=f"Circular import in {package}{' ' + version if version else ''} during '{stage.title}'",
        explanation=(
            f"'{circular['module']}' was imported again while it was still initialising ({cycle}). This happens when a "
            "package's own modules import each other at load time, or when two packages import each other."
        ),
        evidence={**error_evidence(stage), "module": circular["module"], "distribution": distribution, "cycle": circular.get("cycle")},
        remedies=(
            Remedy(f"Check which file `import {package}` runs (this does not run it):", shlex.join([view_of(facts, TargetView).executable, "-c", finds])),
            Remedy(f"Reinstall {distribution.get('distribution') or package} at a release without the cycle:", view_of(facts, TargetView).installer_command("install", ["--force-reinstall", distribution.get("distribution") or package])),
        ),
    )


@check("probe.bisected", "Which single environment change makes a probe crash or hang go away", requires=("probe",))
def bisected(facts: Mapping[str, Any]) -> Iterable[Finding]:
    probe = probe_of(facts)
    bisection = probe.bisection
    if bisection is None:
        return
    tried = {v.name: v.outcome.value for v in bisection.variations}
    passing = [(v.command, BY_NAME[v.name].meaning if v.name in BY_NAME else v.summary) for v in bisection.passing]
    yield bisection_finding("probe.bisected", bisection.failure, passing, {"tried": tried, **({"stage": bisection.stage} if passing else {})})


def bisection_finding(check_id: str, failure: str, passing: Sequence[Tuple[str, str]], evidence: Mapping[str, Any]) -> Finding:
    """The verdict of a bisection, the probe's or a run's: the settings, each (shell line, what it rules
    in), that made `failure` go away, or that none did."""
    if not passing:
        return Finding(
            id=check_id,
            severity=Severity.INFO,
            title=f"No single environment change made the failure ({failure}) go away",
            explanation="The cause is in the installed packages or the machine itself, not in thread, CUDA, CPU-kernel or library-path settings.",
            evidence=dict(evidence),
        )
    return Finding(
        id=check_id,
        severity=Severity.WARNING,
        title=f"The failure ({failure}) goes away with: {', '.join(command for command, _ in passing)}",
        explanation=" ".join(meaning for _, meaning in passing),
        evidence=dict(evidence),
        remedies=tuple(Remedy("Set it before training (in the shell, the job script or the container):", command) for command, _ in passing),
    )
