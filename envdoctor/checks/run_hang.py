"""A command that went silent (`envdoctor run --hang-timeout`): what each thread was waiting on."""

from __future__ import annotations

import shlex
from typing import Any, Iterable, Mapping

from envdoctor.capture import stacks
from envdoctor.checks import check
from envdoctor.model import Finding, Remedy, Severity


@check("run.hang", "The command printed nothing for its hang timeout and was ended", requires=("run",))
def hang(facts: Mapping[str, Any]) -> Iterable[Finding]:
    if facts["run"]["ending"]["kind"] == "hang":
        yield hung_finding(facts["run"])


def hung_finding(run: Mapping[str, Any]) -> Finding:
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
