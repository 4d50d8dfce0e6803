"""Hosts without /proc (macOS, native Windows), shown through ENVDOCTOR_ROOT: facts come from psutil
and py-cpuinfo, the Linux-only checks are skipped with the reason, and nothing crashes; and without
psutil, /proc answers what envdoctor asks about its children."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

import psutil
from conftest import assert_checks_ran, eventually, run_envdoctor, write_host_root
from envdoctor.proc import procfs
from helpers.refusals import one_line_error

pytestmark = pytest.mark.xdist_group("no-proc-reports")  # its expensive fixtures are built once, on one worker

LINUX_ONLY = ("wsl.kernel", "wsl.linux-driver-inside", "memory.shm-small")


def roots_without_proc(base):
    """An empty folder, one that does not exist, and a regular file: none has a /proc."""
    (base / "empty").mkdir()
    (base / "file").write_text("not a folder")
    return {"empty": base / "empty", "missing": base / "missing", "file": base / "file"}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """`check --json` under each root without /proc, run once."""
    roots = roots_without_proc(tmp_path_factory.mktemp("roots"))
    runs = {name: run_envdoctor("check", "--no-probe", "--no-save", "--json", "-", env={"ENVDOCTOR_ROOT": str(root)}) for name, root in roots.items()}
    for run in runs.values():
        assert run.returncode == 0 and "Traceback" not in run.stderr, run
    return {name: run.json() for name, run in runs.items()}


def statuses(report: dict) -> dict:
    return {run["id"]: run for run in report["checks"]}


@pytest.mark.slow
@pytest.mark.parametrize("root", ["empty", "missing", "file"])
def test_facts_come_from_psutil_and_py_cpuinfo(reports, root):
    facts = reports[root]["facts"]
    assert facts["system"]["has_proc"] is False
    assert facts["cpu"]["model"] and facts["cpu"]["flags"] and facts["cpu"]["physical_cores"] == psutil.cpu_count(logical=False)
    assert facts["memory"]["ram_total_bytes"] == psutil.virtual_memory().total
    assert facts["memory"]["shm_total_bytes"] is None


@pytest.mark.slow
@pytest.mark.parametrize("root", ["empty", "missing", "file"])
def test_linux_only_checks_are_skipped_with_the_reason(reports, root):
    runs = statuses(reports[root])
    for check_id in LINUX_ONLY:
        assert runs[check_id]["status"] == "skipped" and runs[check_id]["reason"], runs[check_id]
    assert "/proc" in runs["wsl.kernel"]["reason"] and "/dev/shm" in runs["memory.shm-small"]["reason"]
    assert runs["cpu.missing-instructions"]["status"] == "passed"


def test_a_root_with_proc_is_judged_as_linux(tmp_path):
    root = write_host_root(tmp_path / "root", {"/proc/version": "Linux version 6.1.0 (gcc)\n", "/dev/shm/": ""})
    run = run_envdoctor("check", "--no-probe", "--no-save", "--json", "-", env={"ENVDOCTOR_ROOT": str(root)})
    assert run.returncode == 0, run
    report = run.json()
    assert report["facts"]["system"]["has_proc"] is True and report["facts"]["cpu"]["flags"] == []
    assert statuses(report)["wsl.kernel"]["status"] == "passed"


@pytest.mark.slow
def test_an_older_report_without_has_proc_is_judged_as_linux(reports, tmp_path):
    recorded = reports["empty"]
    del recorded["facts"]["system"]["has_proc"]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(recorded))
    run = run_envdoctor("check", "--from", str(path), "--no-save", "--json", "-")
    assert run.returncode == 0, run
    assert statuses(run.json())["wsl.kernel"]["status"] == "passed"
    assert_checks_ran(run.json(), ran=())


@pytest.mark.slow
def test_a_non_boolean_has_proc_in_a_report_is_refused_or_judged_never_crashes(reports, tmp_path):
    for value in ("no", 0, None, [], {"x": 1}):
        recorded = json.loads(json.dumps(reports["empty"]))
        recorded["facts"]["system"]["has_proc"] = value
        path = tmp_path / "report.json"
        path.write_text(json.dumps(recorded))
        run = run_envdoctor("check", "--from", str(path), "--no-save", "--json", "-")
        if run.returncode == 2:
            one_line_error(run)
        else:
            assert run.returncode == 0 and statuses(run.json())["wsl.kernel"]["status"] == "passed", run
            assert_checks_ran(run.json(), ran=())


@pytest.fixture
def tree():
    """A real process tree: a shell with a sleeping child and a busy one."""
    shell = subprocess.Popen(["bash", "-c", "sleep 30 & (while :; do :; done) & wait"])
    eventually(lambda: sorted(p.name() for p in psutil.Process(shell.pid).children()) == ["bash", "sleep"], "the shell runs both children")
    yield shell
    for child in psutil.Process(shell.pid).children(recursive=True):
        child.kill()
    shell.kill()
    shell.wait()


def test_procfs_answers_as_psutil_does(tree):
    ours, theirs = procfs.Process(tree.pid), psutil.Process(tree.pid)
    assert sorted(p.pid for p in ours.children(recursive=True)) == sorted(p.pid for p in theirs.children(recursive=True))
    assert (ours.status(), ours.name(), ours.cmdline()) == (theirs.status(), theirs.name(), theirs.cmdline())
    assert ours.memory_info().rss == theirs.memory_info().rss
    assert ours.rlimit(procfs.RLIMIT_AS) == theirs.rlimit(psutil.RLIMIT_AS)
    [busy] = [p for p in ours.children() if p.name() == "bash"]
    busy.cpu_percent()
    time.sleep(1.0)  # the interval measured, not a wait for a state
    assert busy.cpu_percent() > 5  # a busy loop's share of a core is 18 % even at load 10 on 2 cores


def test_procfs_knows_an_ended_process_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    watched = procfs.Process(child.pid)
    eventually(lambda: watched.status() == procfs.STATUS_ZOMBIE, "the child has ended")
    child.wait()
    with pytest.raises(procfs.NoSuchProcess):
        watched.kill()
