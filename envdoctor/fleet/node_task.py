"""The task one cluster node runs: `envdoctor check --json -` in a child, as that node's Ray workers see it.

It runs inside a Ray worker, so the report shows the environment a training task on that node gets
(Ray's own variables such as OMP_NUM_THREADS included). The check runs in a child with a timeout:
a node whose stack hangs or crashes yields a result, never a stuck fleet.
"""

from __future__ import annotations

import socket
import sys
from typing import Optional

from envdoctor.proc.children import run_child

REPORT_EXIT_CODES = (0, 1)  # check's exits that carry a report: nothing found, findings found
SCHEDULING_MARGIN_S = 30.0  # for starting a worker process on a busy node, on top of the check's own timeout
PROGRESS = "envdoctor-fleet-answered"  # the driver's progress lines: PROGRESS ANSWERED TOTAL NAME


def answer_deadline_s(timeout: float) -> float:
    """How long the driver waits for a node's answer: its check's time and the margin to start it."""
    return timeout + SCHEDULING_MARGIN_S


def check_options(python: Optional[str], probe: bool) -> list:
    """The options of `check` a fleet passes on; the Ray driver takes them with the same spelling."""
    return [*(("--python", python) if python else ()), *(() if probe else ("--no-probe",))]


def check_argv(python: Optional[str], probe: bool) -> list:
    return [sys.executable, "-m", "envdoctor", "check", "--no-save", "--json", "-", *check_options(python, probe)]


def run_check(python: Optional[str], probe: bool, timeout: float) -> dict:
    """This node's id and host name, the report text `check` printed, or why there is none."""
    import ray  # present wherever this runs: it is a Ray task

    result = run_child(check_argv(python, probe), timeout=timeout)
    produced = result.returncode in REPORT_EXIT_CODES and not result.timed_out and result.stdout.strip()
    tail = result.stderr.strip().splitlines()[-1:] or [""]
    return {
        "node_id": ray.get_runtime_context().get_node_id(),
        "hostname": socket.gethostname(),
        "report": result.stdout if produced else None,
        "error": "" if produced else f"envdoctor check {result.describe()} {tail[0]}".strip(),
    }
