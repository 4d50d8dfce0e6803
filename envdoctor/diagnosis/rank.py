"""Ranking the linked causes into a report's diagnosis, most likely first.

When a failure was seen and no rule links it to anything, the diagnosis says so (confidence none)
and gives the next step that would tell more; the environment's serious findings follow as possible
causes. Without a failure, serious findings are only possible causes of a future one.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from envdoctor.crash import signals
from envdoctor.diagnosis.evidence import RUN_SYMPTOMS, SYMPTOMS, cause, run_of, serious, symptom
from envdoctor.model import Cause, Finding, Remedy, Severity

MAX_POSSIBLE = 5
KERNEL_KILLS = "dmesg -T | grep -i -E 'killed process|out of memory'"
# Findings that describe the failure or the run itself, never a cause of it.
NOT_CAUSES = SYMPTOMS + ("run.interrupted", "run.left-behind", "run.bisected", "probe.bisected", "doctor.check-crashed", "doctor.plugin-failed")


def strongest(causes: Sequence[Cause]) -> List[Cause]:
    """One entry per finding id, the most confident, with the evidence of all that named it."""
    best: Dict[str, Cause] = {}
    for candidate in sorted(causes, key=lambda c: c.rank):
        kept = best.get(candidate.id)
        if kept is None:
            best[candidate.id] = candidate
        else:
            best[candidate.id] = replace(kept, evidence=kept.evidence + tuple(e for e in candidate.evidence if e not in kept.evidence))
    return list(best.values())


def next_step(facts: Mapping[str, Any], seen: Finding) -> Remedy:
    """What would tell more about a failure nothing known explains: for a signal the process's own code
    raised, its native frames; for one sent from outside, who sent it; else which setting matters."""
    run = run_of(facts)
    if seen.id in RUN_SYMPTOMS and run.record:
        command = shlex.join(run.command)
        sent = run.ending.get("signal_name")
        if run.ending_kind == "signal" and sent not in signals.FAULTS:
            return who_sent(sent, command)
        if run.ending_kind == "signal" and not run.record.get("under_gdb"):
            return Remedy("See the native frame that faulted in every thread, and which setting makes it go away:", f"envdoctor run --gdb --bisect -- {command}")
        return Remedy("Find out whether a thread, CUDA, CPU-kernel or library-path setting makes it go away:", f"envdoctor run --bisect -- {command}")
    return Remedy("Run the training command itself under envdoctor, for its native frames, its exception and the files it opens:", "envdoctor run --gdb --bisect -- python train.py")


def who_sent(sent: str, command: str) -> Remedy:
    """How to learn who sent the signal that ended the command: the kernel's OOM killer sends only
    SIGKILL and logs each kill; any signal's sender (its pid and uid) is shown by strace."""
    if sent == "SIGKILL":
        return Remedy("SIGKILL is sent, not raised by a fault in the program's code: the kernel logs each process its OOM killer ends; a timeout, a scheduler, a user or the program itself leaves no such line:", KERNEL_KILLS)
    return Remedy(
        f"{sent} is sent, not raised by a fault in the program's code, and never by the kernel's OOM killer (which sends SIGKILL): strace shows the sender of each {sent} the command receives (si_pid, si_uid):",
        f"strace -f -e trace=none -e signal={sent} -o signals.txt -- {command}",
    )


def last_words(facts: Mapping[str, Any], seen: Finding) -> Tuple[str, ...]:
    """The last line the program wrote to stderr before it exited, where the symptom does not quote it
    already: a program that gives up on purpose (`sys.exit(3)` after its own message) says why there."""
    run = run_of(facts)
    said = [line.strip()[:300] for line in run.output_lines("stderr") if line.strip()] if run.record and run.ending_kind == "exit" else []
    return (f"its last line on stderr: {said[-1]}",) if said and said[-1] not in seen.title else ()


def unknown(facts: Mapping[str, Any], seen: Finding) -> Cause:
    return Cause(seen.id, "none", f"No known cause fits: {seen.title}", (seen.title,) + last_words(facts, seen), next_step(facts, seen), "unknown")


def possible(findings: Sequence[Finding], named: Sequence[str]) -> List[Cause]:
    """Serious findings no rule linked, as possible causes, errors first."""
    rest = [f for f in findings if serious(f) and f.id not in NOT_CAUSES and f.id not in named and f.domain != "doctor"]
    rest.sort(key=lambda f: -f.severity.rank)
    causes = [cause(f, "possible", [f.explanation[:300]] if f.explanation else [], "unlinked") for f in rest]
    return strongest(causes)[:MAX_POSSIBLE]


def ranked(facts: Mapping[str, Any], linked: Sequence[Cause]) -> Tuple[Cause, ...]:
    """The diagnosis: linked causes by confidence, the honest unknown when a failure has none, then
    the possible ones."""
    findings = facts.get("findings") or ()
    causes = strongest(linked)
    seen = symptom(facts)
    if seen is not None and not any(c.confidence in ("confirmed", "likely") for c in causes):
        causes = [unknown(facts, seen)] + causes
    if seen is None and not causes and not any(f.severity is Severity.ERROR for f in findings):
        return tuple(causes)
    return tuple(causes + possible(findings, [c.id for c in causes]))
