"""`envdoctor run` end to end: real child programs crash, hang, run out of memory and exit, for real."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.engine import read_report
from conftest import REPO, interruptible

DATA = REPO / "tests" / "data" / "run"
PY = sys.executable


def program(name: str) -> str:
    return str(DATA / name)


def saved(tmp_path: Path) -> dict:
    """The one crash report the run saved, with its Markdown and picture checked to be beside it."""
    reports = sorted((tmp_path / "reports").glob("crash-*.json"))
    assert len(reports) == 1, reports
    assert reports[0].with_suffix(".md").is_file()
    read_report(reports[0])  # valid against the shipped schema
    return json.loads(reports[0].read_text())


def finding(report: dict, id: str) -> dict:
    matches = [f for f in report["findings"] if f["id"] == id]
    assert matches, [f["id"] for f in report["findings"]]
    return matches[0]


def crashed_thread(report: dict) -> dict:
    return next(t for t in report["run"]["python_stacks"]["threads"] if t["current"])


def test_segfault_in_main_thread_is_mirrored_and_reported(envdoctor, tmp_path):
    result = envdoctor("run", "--", PY, program("segv_main.py"), child=True)
    assert result.returncode == 128 + signal.SIGSEGV, result
    assert "loading model" in result.stdout  # the child's own output passed through
    report = saved(tmp_path)
    assert report["run"]["ending"]["signal_name"] == "SIGSEGV"
    thread = crashed_thread(report)
    assert thread["kind"] == "main" and thread["frames"][0]["function"] == "string_at"
    assert "main thread" in finding(report, "run.crashed")["title"]
    assert {"stream": "stdout", "text": "loading model"} in report["run"]["output_tail"]
    assert (tmp_path / "reports").glob("crash-*.png")
    assert "killed by SIGSEGV" in result.stderr


def test_segfault_in_a_worker_thread_names_the_worker(envdoctor, tmp_path):
    result = envdoctor("run", "--", PY, program("segv_worker.py"), child=True)
    assert result.returncode == 139, result
    report = saved(tmp_path)
    thread = crashed_thread(report)
    assert thread["kind"] == "worker" and thread["entry"]["function"] == "capture_frames"
    others = [t for t in report["run"]["python_stacks"]["threads"] if not t["current"]]
    assert [t["kind"] for t in others] == ["main"]
    assert "worker thread running capture_frames" in finding(report, "run.crashed")["title"]
    assert "crashed in worker thread running capture_frames" in result.stderr


def test_abort_is_mirrored_as_134(envdoctor, tmp_path):
    result = envdoctor("run", "--", PY, program("abort.py"), child=True)
    assert result.returncode == 128 + signal.SIGABRT, result
    report = saved(tmp_path)
    assert report["run"]["ending"]["signal_name"] == "SIGABRT"
    assert report["run"]["python_stacks"]["fatal_error"] == "Aborted"


@pytest.mark.slow
def test_hang_timeout_dumps_every_thread_and_ends_it(envdoctor, tmp_path):
    result = envdoctor("run", "--hang-timeout", "1", "--", PY, program("hang.py"), child=True)
    assert result.returncode == 124, result
    report = saved(tmp_path)
    assert report["run"]["ending"]["kind"] == "hang"
    entries = {t["entry"]["function"] for t in report["run"]["python_stacks"]["threads"]}
    assert entries == {"hold_the_lock", "<module>"}
    assert "hold_the_lock" in finding(report, "run.hang")["explanation"]


@pytest.mark.slow
def test_memory_growth_stopped_by_an_address_space_limit(envdoctor, tmp_path):
    limit = 400 << 20
    limited = f"import os, resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit})); os.execv(sys.executable, [sys.executable, {program('grow.py')!r}])"
    result = envdoctor("run", "--sample-interval", "0.1", "--", PY, "-c", limited, child=True)
    assert result.returncode == 1, result
    report = saved(tmp_path)
    assert report["run"]["memory"]["address_space_limit_bytes"] == limit
    assert report["run"]["memory"]["peak_rss_bytes"] > 100 << 20
    oom = finding(report, "run.out-of-memory")
    assert "RLIMIT_AS" in oom["explanation"] and "MemoryError" in oom["explanation"]
    assert report["findings"][0]["id"] == "run.out-of-memory"  # the cause before the symptom


def writable_memory_cgroup() -> Path:
    for base, limit_file in ((Path("/sys/fs/cgroup/memory"), "memory.limit_in_bytes"), (Path("/sys/fs/cgroup"), "memory.max")):
        if (base / limit_file).exists() or (base / "cgroup.controllers").exists():
            if os.access(base, os.W_OK):
                return base
    pytest.skip("needs a writable memory cgroup (root in a container or on a host with cgroup delegation)")


@pytest.mark.slow
def test_oom_kill_by_a_cgroup_limit(envdoctor, tmp_path):
    base = writable_memory_cgroup()
    group = base / f"envdoctor-test-{os.getpid()}"
    group.mkdir()
    try:
        limit_file = "memory.limit_in_bytes" if (group / "memory.limit_in_bytes").exists() else "memory.max"
        (group / limit_file).write_text(str(200 << 20))
        enter = f"echo $$ > {group}/cgroup.procs && exec {PY} {program('grow.py')}"
        result = envdoctor("run", "--sample-interval", "0.1", "--", "sh", "-c", enter, child=True)
        assert result.returncode == 128 + signal.SIGKILL, result
        report = saved(tmp_path)
        assert report["run"]["ending"]["signal_name"] == "SIGKILL"
        assert "OOM kill" in finding(report, "run.out-of-memory")["explanation"]
    finally:
        group.rmdir()


def test_exit_status_3_passes_both_streams_through(envdoctor, tmp_path):
    result = envdoctor("run", "--", PY, program("exit3.py"), child=True)
    assert result.returncode == 3, result
    assert result.stdout == "training for 0 steps\n"
    assert result.stderr.startswith("error: --steps must be positive\n")
    report = saved(tmp_path)
    assert finding(report, "run.exit-status")["evidence"]["last_error_line"] == "error: --steps must be positive"


def test_a_program_that_gives_up_in_its_own_words_is_unknown_with_those_words(envdoctor, tmp_path):
    result = envdoctor("run", "--", PY, program("gives_up.py"), child=True)
    assert result.returncode == 3, result
    first = saved(tmp_path)["diagnosis"][0]
    assert first["confidence"] == "none"
    assert "its last line on stderr: evaluation failed: mean reward 12.5 below the threshold 200" in first["evidence"]


def test_a_program_killed_by_sigkill_ends_so_and_the_next_step_asks_who_sent_it(envdoctor, tmp_path):
    """Mirrored as a death by the same signal, with nothing but the command's own output on stderr; a
    signal that is sent is not debugged under gdb: the kernel's log tells an OOM kill from the rest."""
    result = envdoctor("run", "--", PY, program("kills_itself.py"), child=True)
    assert result.returncode == 128 + signal.SIGKILL, result
    assert "Traceback" not in result.stderr, result.stderr
    first = saved(tmp_path)["diagnosis"][0]
    assert first["confidence"] == "none" and "dmesg" in first["remedy"]["command"], first
    assert "--gdb" not in result.stderr


def test_a_program_ended_by_another_sent_signal_is_not_sent_to_the_oom_killers_log(envdoctor, tmp_path):
    """The OOM killer sends only SIGKILL: for SIGTERM the next step shows the sender of that signal."""
    result = envdoctor("run", "--", PY, program("terminates_itself.py"), child=True)
    assert result.returncode == 128 + signal.SIGTERM, result
    first = saved(tmp_path)["diagnosis"][0]
    assert first["confidence"] == "none", first
    assert first["remedy"]["command"].startswith("strace -f -e trace=none -e signal=SIGTERM -o signals.txt -- "), first
    assert "dmesg" not in first["remedy"]["command"] and "OOM killer (which sends SIGKILL)" in first["remedy"]["summary"]


def test_a_local_file_that_hides_the_library_is_the_confirmed_cause(envdoctor, tmp_path):
    """The failing process itself says which file `import numpy` ran and what it hid."""
    (tmp_path / "numpy.py").write_text("def helper():\n    return 1\n")
    (tmp_path / "train.py").write_text("import numpy as np\nnp.zeros(3)\n")
    result = envdoctor("run", "--", PY, "train.py", child=True)
    assert result.returncode == 1, result
    report = saved(tmp_path)
    seen = finding(report, "run.shadowed-module")["evidence"]
    assert (seen["module"], seen["file"]) == ("numpy", str(tmp_path / "numpy.py"))
    assert seen["hides"].endswith(os.path.join("site-packages", "numpy", "__init__.py")), seen
    first = report["diagnosis"][0]
    assert (first["id"], first["confidence"]) == ("run.shadowed-module", "confirmed"), report["diagnosis"]


def test_a_missing_name_in_the_installed_library_is_no_shadowing(envdoctor, tmp_path):
    (tmp_path / "train.py").write_text("import numpy as np\nnp.no_such_function_here(3)\n")
    result = envdoctor("run", "--", PY, "train.py", child=True)
    assert result.returncode == 1, result
    report = saved(tmp_path)
    assert report["run"]["exception"].get("shadowing") is None
    assert "run.shadowed-module" not in [f["id"] for f in report["findings"]]
    assert report["diagnosis"][0]["id"] == "run.exception"


def test_stdin_passes_through_and_a_clean_exit_writes_no_report(envdoctor, tmp_path):
    result = envdoctor("run", "--", PY, program("echo_stdin.py"), input="hello from stdin\n", child=True)
    assert result.returncode == 0, result
    assert result.stdout == "got 17 bytes: hello from stdin\n"
    assert "peak RSS" in result.stderr and len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "reports").exists()


def test_always_report_writes_a_report_for_a_clean_exit(envdoctor, tmp_path):
    result = envdoctor("run", "--always-report", "--", PY, "-c", "print('done')", child=True)
    assert result.returncode == 0, result
    report = saved(tmp_path)
    assert report["run"]["ending"]["kind"] == "clean"
    assert not [f for f in report["findings"] if f["id"].startswith("run.")]


def test_ctrl_c_is_forwarded_and_mirrored_without_a_report(tmp_path):
    looping = "import time\nprint('ready', flush=True)\nwhile True: time.sleep(0.05)"
    doctor = subprocess.Popen([PY, "-m", "envdoctor", "run", "--", PY, "-c", looping], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    assert doctor.stdout.readline() == "ready\n"
    doctor.send_signal(signal.SIGINT)
    _, stderr = doctor.communicate(timeout=60)
    assert doctor.returncode == 128 + signal.SIGINT, stderr
    assert "interrupted by SIGINT" in stderr
    assert not (tmp_path / "reports").exists()


def test_a_missing_command_exits_127_like_a_shell(envdoctor):
    result = envdoctor("run", "--", "no-such-command-envdoctor", child=True)
    assert result.returncode == 127, result
    assert result.stderr.startswith("envdoctor: cannot run no-such-command-envdoctor")


def test_a_non_positive_hang_timeout_is_a_usage_error(envdoctor):
    result = envdoctor("run", "--hang-timeout", "0", "--", PY, "-c", "pass", child=True)
    assert result.returncode == 2, result
    assert result.stderr == "envdoctor: error: --hang-timeout must be a number of seconds from 0.1 to 604800, not '0'\n", result


@pytest.mark.slow
def test_gdb_shows_the_native_frame_that_faulted(envdoctor, tmp_path):
    if not __import__("shutil").which("gdb"):
        pytest.skip("gdb is not installed on this machine")
    result = envdoctor("run", "--gdb", "--", PY, program("segv_worker.py"), child=True)
    assert result.returncode == 139, result
    report = saved(tmp_path)
    native = report["run"]["native_stacks"]
    assert native["signal"] == "SIGSEGV"
    stopped = [t for t in native["threads"] if t["stopped"]]
    assert len(stopped) == 1 and "strlen" in stopped[0]["frames"][0]["function"]
    thread = crashed_thread(report)  # faulthandler's thread joined with gdb's by pthread id
    assert thread["entry"]["function"] == "capture_frames"
    assert "strlen" in thread["native_frames"][0]["function"]


def test_gdb_missing_is_a_clear_usage_error(envdoctor, tmp_path):
    result = envdoctor("run", "--gdb", "--", PY, "-c", "pass", env={"PATH": str(tmp_path)}, child=True)
    assert result.returncode == 2, result
    assert "--gdb needs gdb, which is not installed" in result.stderr


USER_SITECUSTOMIZE = "import os\nopen(os.environ['COUNTED'], 'a').write('ran\\n')\nraise ValueError('boom')\n"


def test_the_users_failing_sitecustomize_runs_once_and_speaks_as_without_envdoctor(envdoctor, tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(USER_SITECUSTOMIZE)
    # The user's folder goes after whatever PYTHONPATH the program is given (under run, the hook's folder).
    program = ["sh", "-c", f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{tmp_path / "site"}" COUNTED="$0" exec {PY} -c "print(\'trained\')"']
    plain = subprocess.run([*program, str(tmp_path / "plain")], capture_output=True, text=True)
    result = envdoctor("run", "--", *program, str(tmp_path / "counted"), child=True)
    assert result.returncode == 0, result
    assert result.stdout == plain.stdout == "trained\n"
    assert result.stderr.startswith(plain.stderr) and plain.stderr == "Error in sitecustomize; set PYTHONVERBOSE for traceback:\nValueError: boom\n"
    assert "Traceback" not in result.stderr
    assert (tmp_path / "counted").read_text() == "ran\n"
