"""`envdoctor fleet --address`: a real local Ray cluster (a head and two worker nodes on this machine),
one of whose nodes runs its workers with OMP_NUM_THREADS=7, found as the outlier.

Every node is a `ray start --block` in its own process group, stopped by that group in teardown,
whatever the test did: nothing of the cluster outlives the module.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from envdoctor import engine
from envdoctor.facts.environ import THREAD_VARIABLES

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray-cluster")]  # one cluster, started once, on one worker

RAY = Path(sys.executable).parent / "ray"
START_TIMEOUT_S = 90
STOP_TIMEOUT_S = 15
STARTED = "Ray runtime started"
OUTLIER_RESOURCE = "envdoctor_outlier"
# Long enough for a check without the probe on a busy node; the run waits this plus the scheduling margin for the silent one.
SILENT_NODE_TIMEOUT_S = 8


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """The `ray start --block` processes of one local cluster, started one node at a time."""

    def __init__(self, folder: Path, port: int):
        self.folder, self.port = folder, port
        self.address = f"127.0.0.1:{port}"
        self.processes: list = []

    def start_node(self, name: str, options: list, env: dict) -> None:
        environ = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
        environ.update({"RAY_USAGE_STATS_ENABLED": "0", **env})
        log = open(self.folder / f"{name}.log", "w")
        argv = [str(RAY), "start", "--block", "--num-cpus=1", "--object-store-memory=100000000", "--disable-usage-stats", *options]
        self.processes.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=environ, start_new_session=True))
        log.close()
        self.wait_started(name)

    def wait_started(self, name: str) -> None:
        """Nodes join one at a time: two raylets starting together on one host race for their socket names."""
        deadline = time.monotonic() + START_TIMEOUT_S
        log = self.folder / f"{name}.log"
        while STARTED not in log.read_text(errors="replace"):
            if self.processes[-1].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Ray node {name} did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)

    def stop(self) -> None:
        """SIGTERM to each `ray start --block`, which then stops its node's processes within a second or two
        (a SIGTERM to the whole group left the head's GCS running until the kill); then the groups are killed."""
        for process in reversed(self.processes):
            process.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the group also holds raylet, GCS and worker processes
            except ProcessLookupError:
                pass
            process.wait()


@pytest.fixture(scope="module")
def cluster():
    assert RAY.is_file(), "ray is a test dependency: pip install -e '.[test]'"
    folder = Path(tempfile.mkdtemp(prefix="edray-", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    running = Cluster(folder, free_port())
    try:
        running.start_node("head", ["--head", f"--port={running.port}", "--include-dashboard=false", f"--temp-dir={folder / 't'}"], {})
        joining = [f"--address={running.address}"]
        running.start_node("outlier", [*joining, f"--resources={json.dumps({OUTLIER_RESOURCE: 1})}"], {"OMP_NUM_THREADS": "7"})
        running.start_node("worker", joining, {})
        yield running
    finally:
        running.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def fleet_run(cluster, tmp_path_factory):
    from conftest import run_envdoctor

    cwd = tmp_path_factory.mktemp("fleet-ray")
    reports = cwd / "node-reports"
    run = run_envdoctor("fleet", "--address", cluster.address, "--no-probe", "--timeout", "120", "--report-dir", str(reports), "--json", "-", cwd=cwd, timeout=400)
    return run, reports


def test_the_node_with_another_thread_setting_is_the_outlier(fleet_run):
    run, _ = fleet_run
    assert run.returncode == 1, run
    nodes = run.json()["nodes"]
    assert len(nodes) == 3 and len({n["about"]["node_id"] for n in nodes}) == 3
    deviating = [n for n in nodes if n["deviations"]]
    assert len(deviating) == 1, nodes
    outlier = deviating[0]
    assert OUTLIER_RESOURCE in outlier["about"]["resources"]
    omp = {d["aspect"]: d for d in outlier["deviations"]}["threads.OMP_NUM_THREADS"]
    assert omp["b"] == "7" and omp["a"] != "7" and omp["impact"] == "may break"
    assert all(not n["error"] for n in nodes)


def test_progress_counts_the_nodes_as_they_answer(fleet_run):
    run, _ = fleet_run
    progress = [line for line in run.stderr.splitlines() if line.startswith("envdoctor fleet: ")]
    assert [line.split()[2] for line in progress] == ["1/3", "2/3", "3/3"], run.stderr
    assert all(line.endswith(")") and " nodes answered (" in line for line in progress)


def test_every_report_is_saved_and_reads_back_as_a_fleet(fleet_run, envdoctor):
    run, reports = fleet_run
    saved = sorted(reports.glob("*.json"))
    assert sorted(p.stem for p in saved) == sorted(n["name"] for n in run.json()["nodes"])
    assert all(engine.read_report(p).facts["target"]["python"]["executable"] for p in saved)
    again = envdoctor("fleet", "--reports", str(reports), "--json", "-")
    outlier = [n["name"] for n in again.json()["nodes"] if n["deviations"]]
    assert outlier == [n["name"] for n in run.json()["nodes"] if n["deviations"]]


def test_a_node_that_does_not_answer_is_listed_without_a_report(cluster, tmp_path):
    """The worker node frozen (SIGSTOP on its raylet and workers): the others still count; it is named."""
    from conftest import run_envdoctor

    frozen = cluster.processes[-1].pid
    os.killpg(frozen, signal.SIGSTOP)
    try:
        started = time.monotonic()
        run = run_envdoctor("fleet", "--address", cluster.address, "--no-probe", "--timeout", str(SILENT_NODE_TIMEOUT_S), "--report-dir", str(tmp_path / "r"), "--json", "-", cwd=tmp_path, timeout=400)
        took = time.monotonic() - started
    finally:
        os.killpg(frozen, signal.SIGCONT)
    assert run.returncode == 1, run
    document = run.json()
    silent = [n for n in document["nodes"] if n["error"]]
    assert len(silent) == 1 and len(document["nodes"]) == 3, document["nodes"]
    assert document["counts"]["without_report"] == 1 and document["without_report"][0]["nodes"] == [silent[0]["name"]]
    assert sorted(p.stem for p in (tmp_path / "r").glob("*.json")) == sorted(n["name"] for n in document["nodes"] if not n["error"])
    assert took < SILENT_NODE_TIMEOUT_S + 30 + 60, took  # the node's time and the margins, never Ray's own retries
