"""Where a fleet's reports come from: a folder of reports gathered any way, or a live Ray cluster.

A folder suits every scheduler (`srun envdoctor check --json ...` under Slurm, one Kubernetes job per
node). From Ray, the driver runs as a child (ray_driver.py) and every report it brings back is saved
under the report folder first, then read back like any other folder: both ways end the same.
"""

from __future__ import annotations

import importlib.util
import json
import re
import socket
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

from envdoctor import engine
from envdoctor.errors import EnvdoctorError, ReportReadError, UsageError
from envdoctor.fleet.aggregate import Node
from envdoctor.fleet.node_task import check_options
from envdoctor.proc import run_child
from envdoctor.store import private_folder, write_private

CONNECT_MARGIN_S = 60.0  # connecting to the cluster and starting the driver, on top of the nodes' own time
REACH_TIMEOUT_S = 5.0
HOST_PORT = re.compile(r"^(?:ray://)?\[?([^\[\]/]+?)\]?:(\d+)$")


class FleetError(EnvdoctorError):
    """The cluster could not be reached or did not answer."""


def read_node(name: str, path: Path, about: dict) -> Node:
    """The node's report read from `path`, or the node with the reason it cannot be read."""
    about = {**about, "file": str(path)}
    try:
        return Node(name, engine.read_report(path), about=about)
    except ReportReadError as error:
        return Node(name, None, str(error), about)


def read_directory(directory: Path) -> List[Node]:
    """Every *.json in `directory` as a node named after its file; an unreadable one keeps its reason."""
    if not directory.is_dir():
        raise UsageError(f"--reports {directory}: no such folder")
    paths = sorted(directory.glob("*.json"))
    if not paths:
        raise UsageError(f"--reports {directory}: no *.json reports in it")
    return [read_node(path.stem, path, {}) for path in paths]


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "node"


def node_name(node: dict) -> str:
    """Host name and short node id: several Ray nodes may share one host."""
    return safe_name(f"{node.get('hostname') or node.get('address') or 'node'}-{node['node_id'][:8]}")


def ensure_reachable(address: str) -> None:
    """Fail in seconds on a HOST:PORT nobody listens at; Ray itself retries for minutes ("auto" is left to Ray)."""
    match = HOST_PORT.match(address)
    if not match:
        return
    try:
        socket.create_connection((match.group(1), int(match.group(2))), timeout=REACH_TIMEOUT_S).close()
    except OSError as error:
        raise FleetError(f"no Ray cluster answers at {address}: {error.strerror or error}") from None


def run_driver(address: str, python: Optional[str], probe: bool, timeout: float) -> List[dict]:
    if importlib.util.find_spec("ray") is None:
        raise UsageError(f"fleet --address needs Ray in this environment: {sys.executable} -m pip install 'ray>=2.9'")
    ensure_reachable(address)
    with tempfile.TemporaryDirectory(prefix="envdoctor-fleet-") as scratch:
        out = Path(scratch) / "nodes.json"
        argv = [sys.executable, "-m", "envdoctor.fleet.ray_driver", "--address", address, "--timeout", str(timeout), "--out", str(out)]
        result = run_child([*argv, *check_options(python, probe)], timeout=timeout + CONNECT_MARGIN_S)
        if not result.ok or not out.is_file():
            lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
            raise FleetError(f"cannot collect from the Ray cluster at {address}: driver {result.describe()}; {lines[-1] if lines else 'no message'}")
        return json.loads(out.read_text(encoding="utf-8"))["nodes"]


def collect_from_ray(address: str, report_dir: Path, python: Optional[str], probe: bool, timeout: float) -> List[Node]:
    """Run `check` on every node, save each report as <host>-<node id>.json, and read them back."""
    answers = run_driver(address, python, probe, timeout)
    try:
        private_folder(report_dir)
    except OSError as error:
        raise UsageError(f"cannot create {report_dir}: {error.strerror or error}") from None
    nodes = []
    for answer in answers:
        name = node_name(answer)
        about = {k: answer[k] for k in ("node_id", "hostname", "address", "resources")}
        if answer["report"] is None:
            nodes.append(Node(name, None, answer["error"], about))
            continue
        path = report_dir / f"{name}.json"
        try:
            write_private(path, answer["report"])
        except OSError as error:
            raise UsageError(f"cannot save {path}: {error.strerror or error}") from None
        nodes.append(read_node(name, path, about))
    return nodes
