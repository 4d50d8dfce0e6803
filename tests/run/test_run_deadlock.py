"""Hangs told apart (`envdoctor run --hang-timeout`): threads deadlocked on each other's locks or on the
import lock (run.deadlock), a command still busy on a CPU (run.hang, still_working), and the frames
every stack records (whether the source file exists here, and its line)."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from conftest import findings_by_id, run_envdoctor
from envdoctor.crash import stacks
from envdoctor.engine import Selection, judge

LOCKS_IN_OPPOSITE_ORDER = """\
import threading
lock_a, lock_b = threading.Lock(), threading.Lock()
both_hold_one = threading.Barrier(2)

def take_a_then_b():
    with lock_a:
        both_hold_one.wait()
        with lock_b:
            pass

def take_b_then_a():
    with lock_b:
        both_hold_one.wait()
        with lock_a:
            pass

workers = [threading.Thread(target=take_a_then_b), threading.Thread(target=take_b_then_a)]
for worker in workers:
    worker.start()
for worker in workers:
    worker.join()
"""
PLUGIN_THAT_WAITS_ON_ITS_OWN_IMPORT = """\
import threading

def register():
    import plugin

worker = threading.Thread(target=register)
worker.start()
worker.join()
"""
BUSY_LOOP = """\
n = 0
while True:
    n += 1
"""
WAITS_FOR_A_QUEUE_NOBODY_FILLS = """\
import queue, threading
jobs = queue.Queue()
worker = threading.Thread(target=jobs.get)
worker.start()
worker.join()
"""


def hang(folder: Path, source: str, **modules: str):
    """`envdoctor run --hang-timeout 2` of `source` as prog.py (beside `modules`, name → source): the
    run and its saved report."""
    for name, text in {"prog": source, **modules}.items():
        (folder / f"{name}.py").write_text(text)
    run = run_envdoctor("run", "--hang-timeout", "2", "--report-dir", str(folder / "reports"), "--", sys.executable, str(folder / "prog.py"), cwd=folder, timeout=60, child=True)
    assert run.returncode == 124, run
    return run, json.loads(next((folder / "reports").glob("crash-*.json")).read_text())


@pytest.fixture(scope="session")
def deadlocked(tmp_path_factory):
    return hang(tmp_path_factory.mktemp("deadlock"), LOCKS_IN_OPPOSITE_ORDER)


@pytest.mark.slow
def test_two_threads_taking_two_locks_in_opposite_order_are_a_deadlock(deadlocked):
    run, report = deadlocked
    found = findings_by_id(report)
    [deadlock] = found["run.deadlock"]
    assert deadlock["severity"] == "error"
    waiting = {t["thread"].split(" running ")[1].split(" ")[0]: t for t in deadlock["evidence"]["threads"]}
    assert waiting["take_a_then_b"]["at"] == "`with lock_b:` (prog.py:8)" and waiting["take_a_then_b"]["waits_for"] == "lock"
    assert waiting["take_b_then_a"]["at"] == "`with lock_a:` (prog.py:14)"
    assert waiting["<module>"]["waits_for"] == "join"
    assert any("take_b_then_a (prog.py:14)" in frame for frame in waiting["take_b_then_a"]["frames"])
    assert "with lock_b:" in deadlock["title"] and "with lock_a:" in deadlock["title"]
    assert deadlock["evidence"]["cpu_percent"] is None or deadlock["evidence"]["cpu_percent"] < 5
    [hung] = found["run.hang"]
    assert hung["evidence"]["still_working"] is False and hung["severity"] == "error"
    assert (report["diagnosis"][0]["id"], report["diagnosis"][0]["confidence"]) == ("run.deadlock", "likely")


@pytest.mark.slow
def test_every_frame_records_whether_its_file_is_here_and_its_line(deadlocked):
    _, report = deadlocked
    frames = [f for t in report["run"]["python_stacks"]["threads"] for f in t["frames"]]
    own = [f for f in frames if f["file"].endswith("prog.py")]
    assert own and all(f["exists"] is True for f in own)
    assert {f["source"] for f in own} >= {"with lock_a:", "with lock_b:", "worker.join()"}
    library = [f for f in frames if f["file"].endswith("threading.py")]
    assert library and all(f["exists"] is True and f["source"] for f in library)


@pytest.mark.slow
def test_a_thread_waiting_on_the_import_of_the_module_that_started_it_is_an_import_lock_deadlock(tmp_path):
    _, report = hang(tmp_path, "import plugin\n", plugin=PLUGIN_THAT_WAITS_ON_ITS_OWN_IMPORT)
    [deadlock] = findings_by_id(report)["run.deadlock"]
    kinds = sorted(t["waits_for"] for t in deadlock["evidence"]["threads"])
    assert kinds == ["import lock", "join"]
    assert deadlock["evidence"]["threads"][0]["at"] == "`import plugin` (plugin.py:4)"
    assert "import" in deadlock["remedies"][0]["summary"]
    frozen = [f for t in report["run"]["python_stacks"]["threads"] for f in t["frames"] if f["file"].startswith("<frozen")]
    assert frozen and all(f["exists"] is None and f["source"] is None for f in frozen)


@pytest.mark.slow
def test_a_wait_for_work_that_never_comes_is_a_hang_not_a_deadlock(tmp_path):
    _, report = hang(tmp_path, WAITS_FOR_A_QUEUE_NOBODY_FILLS)
    found = findings_by_id(report)
    assert "run.deadlock" not in found
    assert found["run.hang"][0]["evidence"]["still_working"] is False


@pytest.mark.slow
def test_a_silent_command_still_using_a_cpu_is_busy_not_hung(tmp_path):
    _, report = hang(tmp_path, BUSY_LOOP)
    found = findings_by_id(report)
    [hung] = found["run.hang"]
    assert hung["evidence"]["still_working"] is True and hung["evidence"]["cpu_percent"] >= 20
    assert hung["severity"] == "warning" and "busy-looping, not hung" in hung["title"]
    assert "run.deadlock" not in found


def test_a_frame_whose_file_is_not_on_this_machine_is_marked_foreign(tmp_path):
    """A function compiled elsewhere (as cloudpickle carries it) under a path this machine lacks."""
    script = tmp_path / "prog.py"
    script.write_text('import ctypes\nexec(compile("import ctypes\\nctypes.string_at(0)", "/home/someone-else/train_schedule.py", "exec"))\n')
    run = run_envdoctor("run", "--report-dir", str(tmp_path / "reports"), "--", sys.executable, str(script), cwd=tmp_path, timeout=60, child=True)
    assert run.returncode == 139, run
    report = json.loads(next((tmp_path / "reports").glob("crash-*.json")).read_text())
    frames = {f["file"]: f for t in report["run"]["python_stacks"]["threads"] for f in t["frames"]}
    assert frames["/home/someone-else/train_schedule.py"]["exists"] is False
    assert frames["/home/someone-else/train_schedule.py"]["source"] is None
    assert frames[str(script)]["exists"] is True and frames[str(script)]["source"].startswith("exec(compile(")


def hostile_files(folder: Path):
    """Names a frame may carry that must be answered without reading, blocking or failing: (name, exists)."""
    fifo = folder / "pipe.py"
    os.mkfifo(fifo)
    big = folder / "big.py"
    with open(big, "wb") as stream:
        stream.truncate(stacks.SOURCE_FILE_BYTES + 1)
    yield "a FIFO nobody writes", str(fifo), True
    yield "a device", "/dev/zero", True
    yield "a folder", str(folder), True
    yield "a file larger than a source file", str(big), True
    yield "a missing file", str(folder / "missing.py"), False
    yield "a name faulthandler cut short", "/x" * 300 + "...", None
    yield "an escape past Unicode", str(folder / "\\U0011ffff.py"), False
    yield "a pseudo-file", "<string>", None
    yield "no name", "???", None


def test_frames_of_hostile_files_are_answered_without_reading_them(tmp_path):
    cases = list(hostile_files(tmp_path))
    dump = "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f0000000001 (most recent call first):\n"
    dump += "".join(f'  File "{name}", line 1 in f{i}\n' for i, (_, name, _) in enumerate(cases))
    result = {}
    worker = threading.Thread(target=lambda: result.update(parsed=stacks.parse(dump)), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "parsing blocked on a frame's file"
    frames = result["parsed"]["threads"][0]["frames"]
    for (case, _, exists), frame in zip(cases, frames):
        assert (frame["exists"], frame["source"]) == (exists, None), case


def test_a_name_faulthandler_escaped_is_found_under_its_real_name(tmp_path):
    script = tmp_path / "schedulé.py"
    script.write_text("value = 1  # " + "x" * 400 + "\n")
    escaped = str(script).replace("é", "\\xe9")
    [frame] = stacks.parse(f'Current thread 0x1 (most recent call first):\n  File "{escaped}", line 1 in <module>\n')["threads"][0]["frames"]
    assert frame["exists"] is True and frame["source"] == ("value = 1  # " + "x" * 400)[: stacks.SOURCE_CHARS]


def recorded_hang(python_stacks):
    """A hang as `run` records it, idle in its last samples, with the given stacks."""
    return {
        "command": ["python", "train.py"],
        "duration_s": 32.0,
        "hang_timeout_s": 30.0,
        "sample_interval_s": 0.5,
        "ending": {"kind": "hang", "returncode": -6, "exit_status": 124, "signal": 6, "signal_name": "SIGABRT", "signal_meaning": None, "forwarded_signals": []},
        "python_stacks": python_stacks,
        "output_tail": [],
        "memory": {"samples": [{"t": t, "rss_bytes": 1 << 30, "vms_max_bytes": 2 << 30, "cpu_percent": 0.0, "processes": 1} for t in range(5)], "cgroups": []},
        "gpu": {"source": None, "devices": [], "samples": [], "problems": []},
    }


def waiting_thread(i, **changes):
    frame = {"file": "/srv/train.py", "line": 10 + i, "function": f"step{i}", "exists": True, "source": "with lock:"}
    return {"id": hex(i), "name": None, "current": False, "frames": [{**frame, **changes}], "truncated": False, "kind": "worker", "entry": frame}


def hostile_stacks():
    """What a recorded report may hold as a hang's stacks: (case, stacks, whether run.deadlock is found)."""
    yield "not a mapping", ["threads"], False
    yield "threads not a list", {"threads": {"frames": []}}, False
    yield "threads of the wrong types", {"threads": [None, 7, "x", {"frames": "abc"}, {"frames": [None]}]}, False
    yield "frames of the wrong types", {"threads": [waiting_thread(0, file=7), waiting_thread(1, source=["with lock:"]), waiting_thread(2, line="x")]}, False
    yield "entries of the wrong types", {"threads": [{**waiting_thread(i), "entry": entry} for i, entry in enumerate(([], {"file": 1}, {"file": "/a.py"}))]}, True
    yield "a hundred threads of a hundred frames", {"threads": [{**waiting_thread(i), "frames": waiting_thread(i)["frames"] * 100} for i in range(100)]}, True


@pytest.mark.parametrize("case", list(hostile_stacks()), ids=lambda case: case[0])
def test_recorded_stacks_of_any_shape_are_judged_without_crashing(case):
    _, python_stacks, deadlock_found = case
    judged = judge({}, None, Selection(only=("run.hang", "run.deadlock")), recorded_hang(python_stacks))
    assert {r.id: r.status.value for r in judged.runs if r.id.startswith("run.")} == {"run.hang": "found", "run.deadlock": "found" if deadlock_found else "passed"}
    deadlocks = [f for f in judged.findings if f.id == "run.deadlock"]
    assert all(len(t["frames"]) <= 10 for f in deadlocks for t in f.evidence["threads"])


def queue_waiter(i):
    """A thread in a DataLoader's queue.get: waiting on a condition for a producer, as faulthandler records it."""
    frames = [
        {"file": "/usr/lib/python3.11/threading.py", "line": 331, "function": "wait", "exists": True, "source": "waiter.acquire()"},
        {"file": "/usr/lib/python3.11/queue.py", "line": 180, "function": "get", "exists": True, "source": "self.not_empty.wait(remaining)"},
        {"file": "/venv/site-packages/torch/utils/data/dataloader.py", "line": 1133 + i, "function": "_try_get_data", "exists": True, "source": "data = self._data_queue.get(timeout=timeout)"},
    ]
    return {"id": hex(i), "name": None, "current": False, "frames": frames, "truncated": False, "kind": "worker", "entry": frames[-1]}


def test_threads_waiting_on_queues_for_workers_that_died_of_emfile_are_no_deadlock():
    run = recorded_hang({"threads": [queue_waiter(0), queue_waiter(1)]})
    run["output_tail"] = [{"t": 3.0, "stream": "stderr", "text": "OSError: [Errno 24] Too many open files"}]
    judged = judge({}, None, Selection(), run)
    assert "run.deadlock" not in [f.id for f in judged.findings]
    first = judged.diagnosis[0]
    assert (first.id, first.confidence) == ("run.error-message", "likely")
    assert "open-file limit" in first.summary and first.remedy.command == "ulimit -n 65536"


def test_a_lock_waiter_beside_a_queue_waiter_is_still_a_deadlock():
    judged = judge({}, None, Selection(only=("run.deadlock",)), recorded_hang({"threads": [waiting_thread(0), queue_waiter(1), waiting_thread(2)]}))
    assert [f.id for f in judged.findings] == ["run.deadlock"]
