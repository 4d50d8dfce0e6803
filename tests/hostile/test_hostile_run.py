"""Hostile children and hostile limits: every wait ends on time and nothing a child starts survives.

Real processes throughout: shell scripts posing as Python that leave `setsid` grandchildren holding
the pipes, workers that leave the command's process group, processes that ignore SIGTERM, a doctor
killed by SIGKILL. Survivors are looked for with psutil (a zombie has ended: this machine's init may
not reap orphans), and every test kills what it started in a finally, so a failing test leaks nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable, Iterator, List

import click
import psutil
import pytest

from conftest import run_envdoctor
from envdoctor.codec import encode
from envdoctor.proc import children
from envdoctor.cli import main
from envdoctor.cli.params import DAY_S, WEEK_S, Seconds
from envdoctor.engine import read_report
from envdoctor.errors import UsageError
from envdoctor.interpreter import IDENTITY_MARK

PY = sys.executable
# (command, option, minimum, maximum, the arguments that follow the option)
LIMITS = (
    ("check", "--probe-timeout", 1, DAY_S, ("--no-save",)),
    ("fleet", "--timeout", 1, DAY_S, ("--reports", "no-such-folder")),
    ("run", "--hang-timeout", 0.1, WEEK_S, ("--", "sh", "-c", "touch ran")),
    ("run", "--sample-interval", 0.01, 3600, ("--", "sh", "-c", "touch ran")),
)


def bad_values(minimum: float, maximum: float) -> Iterator[str]:
    """Values a limit must refuse: not finite, out of range either way, not a number, not one line."""
    yield from ("nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e309")
    yield from (repr(minimum / 2), "0", "-0", repr(-minimum), "1e-9", repr(maximum * 2), "1e12")
    yield from ("", " ", "ten", "1,5", "0x10", "5s", "1\n2", "\x1b[31m5")


def limit_cases() -> Iterator:
    for command, option, minimum, maximum, rest in LIMITS:
        for value in bad_values(minimum, maximum):
            yield pytest.param(command, option, minimum, maximum, value, rest, id=f"{command}{option}={value!r}")


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def survivors(pids: Iterable[int], within: float = 5.0) -> List[int]:
    """The pids still running after up to `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        left = [pid for pid in pids if running(pid)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def pids_in(path: Path, count: int = 1, within: float = 10.0) -> List[int]:
    """The pids a test program wrote to `path`, one a line, once `count` of them are there."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        lines = path.read_text().split() if path.exists() else []
        if len(lines) >= count:
            return [int(line) for line in lines]
        time.sleep(0.05)
    raise AssertionError(f"{path} did not get {count} pids")


@pytest.fixture
def pid_file(tmp_path):
    """A file the test's programs write their pids to (fake interpreters write their own beside it);
    whatever of them still runs is killed at the end."""
    path = tmp_path / "pids"
    yield path
    for written in (path, fakes_of(path)):
        for pid in (int(line) for line in (written.read_text().split() if written.exists() else ())):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def fakes_of(pid_file: Path) -> Path:
    return pid_file.with_name(pid_file.name + ".fake")


def fake_python(folder: Path, pid_file: Path, then: str) -> Path:
    """A shell script posing as an interpreter: it starts a `setsid` grandchild that inherits its stdout
    and stderr (in its own session, out of reach of the process group), then does `then`."""
    script = folder / "python"
    script.write_text(f"#!/bin/sh\necho $$ >> {fakes_of(pid_file)}\n{leave('setsid sleep 1000', pid_file)}\n{then}\n")
    script.chmod(0o755)
    return script


def sleeping(pid: int, within: float = 10.0) -> int:
    """`pid` once it runs `sleep`: the pid is written before `setsid` and the like have done their part."""
    deadline = time.monotonic() + within
    while Path(f"/proc/{pid}/comm").read_text().strip() != "sleep":
        assert time.monotonic() < deadline, f"{pid} never ran sleep"
        time.sleep(0.01)
    return pid


def leave(command: str, pid_file: Path) -> str:
    """Shell that starts `command` in the background, notes its pid, and goes on once it runs `sleep`
    (so the process is what the test expects to find by the time the shell ends)."""
    return f"{command} & echo $! >> {pid_file}; until grep -qx sleep /proc/$!/comm; do sleep 0.01; done"


def single_error_line(stderr: str) -> str:
    assert stderr.count("\n") == 1 and stderr.startswith("envdoctor: error: "), stderr
    assert "Traceback" not in stderr
    return stderr.rstrip("\n")


# --- limits: every option that sets a time refuses what would switch it off or spin -------------------


def refusal(option: str, minimum: float, maximum: float, value: str) -> str:
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return f"envdoctor: error: {option} must be a number of seconds from {minimum:g} to {maximum:g}, not {shown}\n"


@pytest.mark.parametrize("command, option, minimum, maximum, value, rest", list(limit_cases()))
def test_a_bad_limit_is_one_usage_line_and_nothing_runs(tmp_path, monkeypatch, capsys, command, option, minimum, maximum, value, rest):
    """The CLI's own entry point, in this process: each case costs no interpreter start."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main([command, option, value, *rest])
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.err == refusal(option, minimum, maximum, value) and captured.out == ""
    assert list(tmp_path.iterdir()) == []  # no report, and the command did not run


@pytest.mark.parametrize("command, option, minimum, maximum, rest", [pytest.param(c, o, lo, hi, r, id=f"{c}{o}") for c, o, lo, hi, r in LIMITS])
def test_nan_is_refused_by_the_installed_command(envdoctor, tmp_path, command, option, minimum, maximum, rest):
    result = envdoctor(command, option, "nan", *rest, child=True)
    assert result.returncode == 2, result
    assert single_error_line(result.stderr) + "\n" == refusal(option, minimum, maximum, "nan")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text, expected", [("0.1", 0.1), ("1", 1.0), (" 2.5 ", 2.5), ("1e3", 1000.0), (604800, 604800.0)])
def test_seconds_accepts_finite_values_within_its_range(text, expected):
    assert Seconds(0.1, WEEK_S).convert(text, None, None) == expected


def test_the_limits_at_both_ends_are_accepted_by_the_real_cli(envdoctor, tmp_path):
    result = envdoctor("run", "--hang-timeout", "0.1", "--sample-interval", "3600", "--", "sh", "-c", "touch ran", child=True)
    assert result.returncode == 0, result
    assert (tmp_path / "ran").exists()


def test_a_huge_rejected_value_is_shortened_in_the_message():
    with pytest.raises(UsageError) as raised:
        Seconds(1, 2).convert("9" * 500, click.Option(["--probe-timeout"]), None)
    assert str(raised.value) == f"--probe-timeout must be a number of seconds from 1 to 2, not '{'9' * 36}..."


# --- the child runner: a limit is absolute, and the whole family ends with the child ------------------


@pytest.mark.slow  # waits out real time limits
def test_a_setsid_grandchild_holding_stdout_does_not_keep_an_exited_child_waited_on(tmp_path, pid_file):
    python = fake_python(tmp_path, pid_file, "exit 1")
    started = time.monotonic()
    result = children.run_child([str(python)], timeout=30)
    assert time.monotonic() - started < children.DRAIN_S + 3, result
    assert result.returncode == 1 and not result.timed_out
    assert survivors(pids_in(pid_file) + pids_in(fakes_of(pid_file))) == []


@pytest.mark.slow  # waits out real time limits
def test_a_hanging_child_with_a_setsid_grandchild_ends_at_its_limit(tmp_path, pid_file):
    python = fake_python(tmp_path, pid_file, "exec sleep 1000")
    started = time.monotonic()
    result = children.run_child([str(python)], timeout=1)
    assert time.monotonic() - started < 4, result
    assert result.timed_out and result.signal_name == "SIGKILL"
    assert survivors(pids_in(pid_file) + pids_in(fakes_of(pid_file))) == []


@pytest.mark.slow  # waits out real time limits
def test_a_streamed_child_with_a_setsid_grandchild_ends_at_its_limit(tmp_path, pid_file):
    python = fake_python(tmp_path, pid_file, "echo started\nexec sleep 1000")
    lines: List[str] = []
    started = time.monotonic()
    result = children.stream_child([str(python)], lines.append, timeout=1)
    assert time.monotonic() - started < 4, result
    assert result.timed_out and lines == ["started"] and result.stdout == "started\n"
    assert survivors(pids_in(pid_file) + pids_in(fakes_of(pid_file))) == []


@pytest.mark.slow  # waits out real time limits
def test_a_child_that_closes_its_pipes_is_still_waited_for_to_its_limit(pid_file):
    result = children.run_child(["sh", "-c", f"echo $$ >> {pid_file}; exec >&- 2>&-; sleep 1000"], timeout=1)
    assert result.timed_out
    assert survivors(pids_in(pid_file)) == []


@pytest.mark.slow  # waits out real time limits
def test_a_child_that_never_stops_writing_ends_at_its_limit_and_its_output_is_bounded():
    started = time.monotonic()
    result = children.run_child(["yes"], timeout=1)
    assert result.timed_out and time.monotonic() - started < 4
    assert result.stdout.startswith("y\ny\n") and result.stdout.endswith("y\n")
    assert len(result.stdout) <= 2 * children.KEPT_BYTES + 100 and "bytes left out ...]" in result.stdout


@pytest.mark.slow  # waits out real time limits
def test_a_streamed_line_without_an_end_is_handed_over_in_bounded_pieces():
    lengths: List[int] = []
    result = children.stream_child(["sh", "-c", "yes | tr -d '\\n'"], lambda line: lengths.append(len(line)), timeout=1)
    assert result.timed_out and len(lengths) > 1
    assert max(lengths) <= children.LONGEST_LINE + children.CHUNK


LEFTOVERS = (
    pytest.param("setsid sleep 1000", id="own-session"),
    pytest.param("sleep 1000", id="same-group"),
    pytest.param("setsid sh -c 'exec sleep 1000 </dev/null >/dev/null 2>&1'", id="daemon-with-closed-stdio"),
)


@pytest.mark.parametrize("command", LEFTOVERS + (pytest.param("env -i sleep 1000", id="cleared-environment-in-the-group"),))
@pytest.mark.slow  # waits out real time limits
def test_what_an_ended_child_leaves_running_is_killed(pid_file, command):
    result = children.run_child(["sh", "-c", leave(command, pid_file) + "; exit 0"], timeout=10)
    assert result.returncode == 0 and not result.timed_out, result
    assert survivors(pids_in(pid_file)) == []


@pytest.mark.slow  # waits out real time limits
def test_a_double_forked_orphan_is_killed(pid_file):
    script = f"(setsid sleep 1000 & echo $! >> {pid_file}) & until [ -s {pid_file} ]; do sleep 0.01; done; exit 0"
    started = time.monotonic()
    result = children.run_child(["sh", "-c", script], timeout=30)
    assert result.returncode == 0 and time.monotonic() - started < children.DRAIN_S + 3, result
    assert survivors(pids_in(pid_file)) == []


@pytest.mark.slow  # waits out real time limits
def test_a_double_forked_orphan_that_cleared_its_environment_is_killed(pid_file):
    """Neither the tree (it was orphaned) nor the marker (env -i) finds it: the intermediary, a
    sub-reaper, is its parent now."""
    script = f"(setsid env -i sleep 1000 & echo $! >> {pid_file}) & until [ -s {pid_file} ]; do sleep 0.01; done; exit 0"
    result = children.run_child(["sh", "-c", script], timeout=30)
    assert result.returncode == 0, result
    assert survivors(pids_in(pid_file)) == []


@pytest.mark.slow  # waits out real time limits
def test_processes_are_looked_for_only_while_the_tree_may_live(pid_file, monkeypatch):
    """The intermediary says when it has reaped the whole tree: only then is the search skipped; a
    program that leaves a process behind is searched for and the process ended."""
    searched = []
    search = children.kill_family
    monkeypatch.setattr(children, "kill_family", lambda child: searched.append(child.pid) or search(child))
    assert children.run_child(["sh", "-c", "sleep 0.2 & wait; exit 3"], timeout=30).returncode == 3
    assert searched == []
    result = children.run_child(["sh", "-c", leave("setsid sleep 1000", pid_file) + "; exit 0"], timeout=10)
    assert result.returncode == 0 and len(searched) == 1, result
    assert survivors(pids_in(pid_file)) == []


def test_an_intermediary_whose_doctor_is_already_gone_starts_nothing(tmp_path):
    """The intermediary arms its own death signal, then checks that its parent is still the doctor
    that started it: a doctor that died in between leaves no program behind."""
    ran = tmp_path / "ran"
    reports, report = os.pipe()
    try:
        argv = [PY, "-I", "-S", "-c", children.SUBREAPER_SOURCE, str(report), "1", "-", "touch", str(ran)]
        ended = subprocess.run(argv, pass_fds=(report,), timeout=30)
    finally:
        os.close(report)
        os.close(reports)
    assert ended.returncode == 127 and not ran.exists(), ended


def test_a_child_s_parent_is_not_the_doctor(pid_file):
    result = children.run_child([PY, "-c", "import os; print(os.getppid())"], timeout=30)
    assert result.ok and int(result.stdout) != os.getpid()


def test_a_child_that_kills_its_parent_is_a_result_and_the_doctor_lives(pid_file):
    script = f"import os, signal, time; open({str(pid_file)!r}, 'a').write('%d\\n' % os.getpid()); os.kill(os.getppid(), signal.SIGKILL); time.sleep(1000)"
    result = children.run_child([PY, "-c", script], timeout=30)
    assert result.signal_name == "SIGKILL" and not result.timed_out, result
    assert survivors(pids_in(pid_file)) == []


def test_a_program_keeps_its_return_code_signal_and_environment_through_the_intermediary():
    assert children.run_child(["sh", "-c", "exit 7"], timeout=30).returncode == 7
    assert children.run_child(["sh", "-c", "kill -SEGV $$"], timeout=30).signal_name == "SIGSEGV"
    seen = children.run_child(["sh", "-c", 'echo "[$LC_CTYPE]"; trap'], timeout=30, env={"PATH": os.environ["PATH"]})
    assert seen.stdout == "[]\n"  # no coerced locale, and no signal the program inherits ignored
    assert "could not start" in children.run_child(["no-such-program-here"], timeout=30).describe()


def test_the_marker_finds_descendants_that_left_the_session(pid_file):
    child = children.start_child(["sh", "-c", leave("setsid sleep 1000", pid_file) + "; exec sleep 1000"], stdout=subprocess.DEVNULL)
    try:
        grandchild = sleeping(pids_in(pid_file)[0])
        sleeping(child.program_pid)  # the shell's own wait for the grandchild is over
        assert os.getsid(grandchild) != child.pid
        assert grandchild in children.marked(child.marker)
        assert {p.pid for p in children.descendants(child)} == {child.program_pid, grandchild}
        assert children.signal_family(child, signal.SIGKILL) == 2
        assert survivors([child.pid, child.program_pid, grandchild]) == []
    finally:
        children.kill_family(child)
        child.wait()


# The fake answers envdoctor's interpreter question as a CPython, so it is diagnosed, not refused.
CPYTHON_ANSWER = f"""case "$*" in *python_implementation*) echo '{IDENTITY_MARK}["CPython", [3, 11, 0]]'; exit 0;; esac"""


@pytest.mark.slow  # waits out real time limits
def test_check_with_a_fake_interpreter_leaving_a_setsid_grandchild_finishes_and_leaves_nothing(tmp_path, pid_file):
    """Every child of `check` (the interpreter question, facts script, probe, bisection) runs the fake;
    each leaves a grandchild."""
    python = fake_python(tmp_path, pid_file, f"{CPYTHON_ANSWER}\nexit 1")
    started = time.monotonic()
    result = run_envdoctor("check", "--python", str(python), "--no-save", "--probe-timeout", "5", cwd=tmp_path, child=True, timeout=120)  # the doctor's own end
    assert time.monotonic() - started < 60, result
    assert result.returncode == 2 and "cannot read the interpreter" in result.stderr, result  # its facts script failed
    fakes = pids_in(fakes_of(pid_file), 2)  # at least the facts script and the probe ladder
    assert survivors(pids_in(pid_file, len(fakes)) + fakes) == []


@pytest.mark.slow  # waits out real time limits
def test_killing_check_with_sigkill_ends_its_children(tmp_path, pid_file):
    python = fake_python(tmp_path, pid_file, f"{CPYTHON_ANSWER}\nexec sleep 1000")
    doctor = subprocess.Popen([PY, "-m", "envdoctor", "check", "--python", str(python), "--no-save"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        fakes = pids_in(fakes_of(pid_file), 2)
        doctor.kill()
        doctor.wait()
        assert survivors(fakes) == []  # its direct children; the grandchildren of a SIGKILLed doctor are out of its reach
    finally:
        doctor.kill()
        doctor.wait()


# --- envdoctor run: signals reach every worker, the command dies with the doctor, nothing is left -----

WORKER = """
import os, signal, sys, time

def stop(number, frame):
    with open(os.path.join(sys.argv[1], "got-" + signal.Signals(number).name), "a") as note:
        note.write("x")
    sys.exit(0)

signal.signal(signal.SIGTERM, stop)
with open(os.path.join(sys.argv[1], "pids"), "a") as pids:
    pids.write("%d\\n" % os.getpid())
time.sleep(1000)
"""
COMMAND = """
import os, signal, subprocess, sys, time
mode, folder, worker = sys.argv[1:]
options = {"own-session": {"start_new_session": True}, "own-group": {"preexec_fn": os.setpgrp}, "same-group": {}}[mode]
child = subprocess.Popen([sys.executable, worker, folder], **options)
signal.signal(signal.SIGTERM, lambda number, frame: (child.wait(), sys.exit(128 + number)))
print("ready", flush=True)
time.sleep(1000)
"""


@pytest.mark.parametrize("mode", ["own-session", "own-group", "same-group"])
def test_sigterm_reaches_every_worker_once_and_the_verdict_counts_them(tmp_path, pid_file, mode):
    """The worker writes its pid to pid_file, so it is killed at the end whatever happens."""
    (tmp_path / "worker.py").write_text(WORKER)
    argv = [PY, "-m", "envdoctor", "run", "--", PY, "-c", COMMAND, mode, str(tmp_path), str(tmp_path / "worker.py")]
    doctor = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"})
    try:
        assert doctor.stdout.readline() == "ready\n"
        worker = pids_in(pid_file)[0]
        doctor.send_signal(signal.SIGTERM)
        _, stderr = doctor.communicate(timeout=30)
        assert doctor.returncode == 128 + signal.SIGTERM, stderr
        assert (tmp_path / "got-SIGTERM").read_text() == "x"  # delivered once: not by group and again by pid
        assert "interrupted by SIGTERM" in stderr
        assert "envdoctor: SIGTERM forwarded to 2 processes\n" in stderr
        assert survivors([worker]) == []
    finally:
        doctor.kill()
        doctor.wait()


def test_the_command_dies_with_a_sigkilled_doctor(tmp_path, pid_file):
    doctor = subprocess.Popen([PY, "-m", "envdoctor", "run", "--", "sh", "-c", f"echo $$ >> {pid_file}; exec sleep 1000"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        command = pids_in(pid_file)[0]
        doctor.send_signal(signal.SIGKILL)
        doctor.wait()
        assert survivors([command]) == []
    finally:
        doctor.kill()
        doctor.wait()


def run_leaving(tmp_path: Path, script: str, *options: str):
    return run_envdoctor("run", *options, "--", "sh", "-c", script, cwd=tmp_path, timeout=60, child=True)


@pytest.mark.parametrize("command", LEFTOVERS)
def test_processes_left_after_a_clean_exit_are_named_and_stopped(tmp_path, pid_file, command):
    result = run_leaving(tmp_path, leave(command, pid_file) + "; exit 0")
    left = pids_in(pid_file)[0]
    assert result.returncode == 0, result
    assert f"envdoctor: 1 process still ran after the command ended and was stopped: {left} sleep 1000 (SIGTERM)" in result.stderr
    assert survivors([left]) == []
    assert not (tmp_path / "reports").exists()


@pytest.mark.slow  # waits out real time limits
def test_an_orphan_in_its_own_session_without_the_marker_is_named_and_stopped(tmp_path, pid_file):
    """Double-forked, new session, environment cleared, SIGTERM ignored: only the sub-reaper still holds it."""
    orphan = "setsid env -i sh -c 'trap \"\" TERM; exec sleep 1000'"
    script = f"({orphan} & echo $! >> {pid_file}) & until [ -s {pid_file} ]; do sleep 0.01; done; until grep -qx sleep /proc/$(cat {pid_file})/comm; do sleep 0.01; done; exit 0"
    result = run_leaving(tmp_path, script)
    left = pids_in(pid_file)[0]
    assert result.returncode == 0, result
    assert f"{left} sleep 1000 (SIGKILL)" in result.stderr and "still ran after the command ended" in result.stderr
    assert survivors([left]) == []


@pytest.mark.slow
def test_a_leftover_ignoring_sigterm_is_killed_and_recorded_in_the_report(tmp_path, pid_file):
    result = run_leaving(tmp_path, leave("setsid sh -c 'trap \"\" TERM; exec sleep 1000'", pid_file) + "; exit 3")
    left = pids_in(pid_file)[0]
    assert result.returncode == 3, result
    assert survivors([left]) == []
    saved = sorted((tmp_path / "reports").glob("crash-*.json"))
    read_report(saved[0])  # the report with its new facts still matches the shipped schema
    report = json.loads(saved[0].read_text())
    assert report["run"]["left_behind"] == [{"pid": left, "name": "sleep", "cmdline": "sleep 1000", "ended_by": "SIGKILL"}]
    finding = next(f for f in report["findings"] if f["id"] == "run.left-behind")
    assert finding["severity"] == "warning" and f"{left} sleep 1000 (SIGKILL)" in finding["title"]
    assert "still ran after the command ended" in result.stderr


def test_a_command_that_kills_its_parent_ends_the_run_not_the_doctor(tmp_path):
    result = run_envdoctor("run", "--", PY, "-c", "import os, signal; os.kill(os.getppid(), signal.SIGKILL)", cwd=tmp_path, timeout=60, child=True)
    assert result.returncode == 128 + signal.SIGKILL, result
    assert "SIGKILL" in result.stderr and "Traceback" not in result.stderr
    assert sorted((tmp_path / "reports").glob("crash-*.json"))


def test_a_clean_command_that_leaves_nothing_says_nothing_more(tmp_path):
    result = run_envdoctor("run", "--", "sh", "-c", "exit 0", cwd=tmp_path, child=True)
    assert result.returncode == 0, result
    assert result.stderr.count("\n") == 1 and "still ran" not in result.stderr and "forwarded" not in result.stderr


@pytest.mark.slow  # waits out real time limits
def test_workers_of_a_hung_command_are_ended_and_recorded(tmp_path, pid_file):
    result = run_leaving(tmp_path, leave("setsid sleep 1000", pid_file) + "; sleep 1000", "--hang-timeout", "1")
    assert result.returncode == 124, result
    left = pids_in(pid_file)[0]
    assert survivors([left]) == []
    report = json.loads(sorted((tmp_path / "reports").glob("crash-*.json"))[0].read_text())
    assert left in [p["pid"] for p in report["run"]["left_behind"]]


# --- the probe cleans up after SB3 ------------------------------------------------------------------


@pytest.mark.slow
def test_a_probe_run_leaves_no_sb3_log_folder(tmp_path):
    from envdoctor.probe.runner import ProbeOptions, run_ladder

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = encode(run_ladder(PY, {**os.environ, "TMPDIR": str(scratch)}, ProbeOptions(timeout_s=120, bisect=False), until="learn"))
    assert {s["id"]: s["status"] for s in result["stages"]}["learn"] == "passed", result
    assert list(scratch.glob("SB3-*")) == []


def test_run_keeps_the_commands_exit_status_when_the_report_cannot_be_saved(tmp_path):
    blocked = tmp_path / "reports"
    blocked.write_text("a file where the report folder should be")
    run = run_envdoctor("run", "--report-dir", str(blocked / "crashes"), "--", sys.executable, "-c", "raise SystemExit(3)", timeout=120, child=True)
    assert run.returncode == 3, run
    assert "warning: cannot save the report" in run.stderr and "Traceback" not in run.stderr
    assert blocked.read_text() == "a file where the report folder should be"
