"""The probe's parts on their own: faulthandler dumps from real dying children, and the pure checks
on recorded probe results (what `check --from` re-judges)."""

from __future__ import annotations

import sys
import textwrap

from envdoctor import engine
from envdoctor.codec import encode
from envdoctor.crash import tracebacks
from envdoctor.probe import ladder
from envdoctor.probe.result import Ending, ProbeResult, StageResult, StageStatus
from envdoctor.proc.children import run_child


def dump_of(source: str) -> tuple:
    child = run_child([sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(source)], timeout=30)
    return child, tracebacks.parse(child.stderr)


def test_segfault_dump_gives_the_crashing_thread_innermost_first():
    child, dump = dump_of(
        """
        import ctypes

        def boom():
            ctypes.string_at(0)

        boom()
        """
    )
    assert child.signal_name == "SIGSEGV"
    assert dump["fatal_error"] == "Segmentation fault" and dump["timeout_after"] is None
    thread = tracebacks.busy_thread(dump)
    assert thread["current"] is True
    assert [f["function"] for f in thread["frames"]] == ["string_at", "boom", "<module>"]
    assert thread["frames"][1] == {"file": "<string>", "line": 5, "function": "boom"}


def test_timeout_dump_lists_every_thread_and_finds_the_one_running_a_stage():
    child, dump = dump_of(
        """
        import faulthandler, threading, time

        def background():
            time.sleep(30)

        def run_stage():
            time.sleep(30)

        threading.Thread(target=background, daemon=True).start()
        faulthandler.dump_traceback_later(0.5, exit=True)
        run_stage()
        """
    )
    assert child.returncode == 1
    assert dump["timeout_after"].startswith("0:00:00.5")
    assert len(dump["threads"]) == 2
    assert tracebacks.busy_thread(dump)["frames"][0]["function"] == "run_stage"


def test_text_without_a_dump_parses_to_none():
    assert tracebacks.parse("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nValueError\n") is None


def probe_findings(*stages: StageResult) -> dict:
    probe = encode(ProbeResult("python", Ending.COMPLETED, stages, 1.0))
    findings, runs, _, _ = engine.judge({}, probe, engine.Selection(only=("probe", "threads.multiple-openmp")))
    return {f.id: f for f in findings}


def thread_pools(*runtimes) -> StageResult:
    details = {"openmp_runtimes": [{"user_api": "openmp", "prefix": p, "filepath": f} for p, f in runtimes]}
    return StageResult("thread_pools", "thread pools", StageStatus.PASSED, 0.01, details=details)


def test_libiomp_with_libomp_is_the_crashing_openmp_pair():
    found = probe_findings(thread_pools(("libiomp", "/opt/conda/lib/libiomp5.so"), ("libomp", "/opt/conda/lib/libomp.so")))
    finding = found["threads.multiple-openmp"]
    assert finding.severity.value == "error"
    assert finding.remedies[0].command == "export MKL_THREADING_LAYER=GNU"


def test_gnu_with_intel_openmp_is_a_warning_and_one_runtime_is_fine():
    two = probe_findings(thread_pools(("libgomp", "/venv/torch/lib/libgomp.so.1"), ("libiomp", "/opt/intel/libiomp5.so")))
    assert two["threads.multiple-openmp"].severity.value == "warning"
    assert probe_findings(thread_pools(("libgomp", "/venv/torch/lib/libgomp.so.1"))) == {}


def test_an_exception_after_the_imports_is_a_stage_failure_with_the_dynamo_hint():
    error = {"type": "RuntimeError", "message": "Dynamo is not supported on Python 3.14+", "frames": [], "circular_import": None}
    found = probe_findings(StageResult("maskable_ppo", "MaskablePPO construct", StageStatus.FAILED, 1.2, error=error))
    assert set(found) == {"probe.stage-failed"}
    assert "torch._dynamo" in found["probe.stage-failed"].explanation


def test_a_terminal_sees_a_running_clock_on_a_long_stage_and_nothing_after_it_ends():
    import time as clock

    from envdoctor.probe.progress import ProgressPrinter

    written = []
    printer = ProgressPrinter(written.append, live=True, tick=0.02)
    printer({"event": "begin", "stage": "import_torch"})
    clock.sleep(0.2)
    printer({"event": "end", "stage": "import_torch", "status": "passed", "duration_s": 1.5})
    text = "".join(written)
    assert text.count("\rprobe: import torch … 0 s") >= 2 and text.endswith("\x1b[Kpassed 1.50 s\n")
    settled = len(written)
    clock.sleep(0.1)
    assert len(written) == settled  # the clock stopped with its stage

    plain = []
    printer = ProgressPrinter(plain.append)
    printer({"event": "begin", "stage": "import_torch"})
    printer({"event": "end", "stage": "import_torch", "status": "not_run", "duration_s": 0.0})
    assert "".join(plain) == "probe: import torch … not run 0.00 s\n"  # a pipe or file gets plain lines


def test_every_stage_needs_only_earlier_stages_and_runs_its_own_function():
    """The one stage table: a need on a later stage would always read "did not run", and each row's
    function is the stage of its id."""
    for index, stage in enumerate(ladder.STAGES):
        assert set(stage.needs) <= set(ladder.IDS[:index]), stage.id
        assert stage.function.__name__ == f"stage_{stage.id}"
        assert set(stage.modules) <= set(ladder.DISTRIBUTIONS), stage.id
    assert [s.id for s in ladder.STAGES if s.cuda] == ["cuda_init", "cuda_matmul"]
    assert ladder.limits(5)["import_torch"] == ladder.BY_ID["import_torch"].limit_s + 5 == 125
