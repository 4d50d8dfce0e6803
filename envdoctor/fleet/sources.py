"""Where a fleet's reports come from: a folder of reports gathered any way, or a live Ray cluster.

A folder suits every scheduler (`srun envdoctor check --json ...` under Slurm, one Kubernetes job per
node). From Ray, the driver runs as a child (ray_driver.py) and every report it brings back is saved
under the report folder as it is read from the driver's answers, then read back like any other
folder: both ways end the same. Nodes the driver asked but that never answered are nodes without a report.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import sys
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Sequence

from envdoctor.errors import EnvdoctorError, UsageError
from envdoctor.fleet.node_task import PROGRESS, answer_deadline_s, check_options
from envdoctor.fleet.nodes import NodeSource
from envdoctor.proc.children import ChildResult, Kept, LineSplitter, run_piped
from envdoctor.store import private_folder, write_private

CONNECT_MARGIN_S = 60.0  # connecting to the cluster and starting the driver, on top of the nodes' own time
REACH_TIMEOUT_S = 5.0
HOST_PORT = re.compile(r"^(?:ray://)?\[?([^\[\]/]+?)\]?:(\d+)$")
PROGRESS_LINE = re.compile(rf"^{PROGRESS} (\d+) (\d+) (.*)$")
OnAnswer = Callable[[int, int, str], None]  # answered so far, nodes asked, the node that answered


class FleetError(EnvdoctorError):
    """The cluster could not be reached or did not answer."""


def report_files(path: Path) -> List[Path]:
    """The reports `path` names: the *.json in a folder, or the file itself (read, or refused, as a node)."""
    if path.is_dir():
        found = sorted(path.glob("*.json"))
        if not found:
            raise UsageError(f"--reports {path}: no *.json reports in it")
        return found
    if not os.path.lexists(path):
        raise UsageError(f"--reports {path}: no such file or folder")
    return [path]


def read_reports(paths: Sequence[Path]) -> List[NodeSource]:
    """Every report in `paths` (folders and files) as a node named after its file; where two files
    share a name (two folders of one fleet), by its path."""
    files = list(dict.fromkeys(file for path in paths for file in report_files(path)))
    stems = Counter(file.stem for file in files)
    return [NodeSource(file.stem if stems[file.stem] == 1 else str(file), file) for file in files]


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


def progress_relay(on_answer: OnAnswer) -> Callable[[str], None]:
    """The driver's stdout lines handler: its progress lines to `on_answer`, anything else (Ray's own words) dropped."""

    def relay(line: str) -> None:
        match = PROGRESS_LINE.match(line)
        if match:
            on_answer(int(match.group(1)), int(match.group(2)), match.group(3))

    return relay


def run_driver(address: str, out: Path, python: Optional[str], probe: bool, timeout: float, on_answer: OnAnswer) -> ChildResult:
    if importlib.util.find_spec("ray") is None:
        raise UsageError(f"fleet --address needs Ray in this environment: {sys.executable} -m pip install 'ray>=2.9'")
    ensure_reachable(address)
    argv = [sys.executable, "-m", "envdoctor.fleet.ray_driver", "--address", address, "--timeout", str(timeout), "--out", str(out)]
    lines, stderr = LineSplitter(progress_relay(on_answer)), Kept()
    result = run_piped([*argv, *check_options(python, probe)], answer_deadline_s(timeout) + CONNECT_MARGIN_S, None, None, lines.feed, stderr.feed)
    lines.close()
    return replace(result, stderr=stderr.text())


def driver_lines(out: Path, address: str, result: ChildResult) -> Iterator[dict]:
    """The driver's JSON lines, one at a time; FleetError when it never said which nodes it asked."""
    try:
        with out.open(encoding="utf-8") as stream:
            yield json.loads(next(stream))
            yield from (json.loads(line) for line in stream if line.endswith("\n"))  # a last line cut short is no answer
    except (OSError, StopIteration, ValueError):
        lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
        raise FleetError(f"cannot collect from the Ray cluster at {address}: driver {result.describe()}; {lines[-1] if lines else 'no message'}") from None


def saved(answer: dict, report_dir: Path) -> NodeSource:
    """The node that answered, its report saved as <host>-<node id>.json."""
    name = node_name(answer)
    about = {k: answer[k] for k in ("node_id", "hostname", "address", "resources")}
    if answer["report"] is None:
        return NodeSource(name, None, about, answer["error"])
    path = report_dir / f"{name}.json"
    try:
        write_private(path, answer["report"])
    except OSError as error:
        raise UsageError(f"cannot save {path}: {error.strerror or error}") from None
    return NodeSource(name, path, about)


def collect_from_ray(address: str, report_dir: Path, python: Optional[str], probe: bool, timeout: float, on_answer: OnAnswer) -> List[NodeSource]:
    """Run `check` on every node, save each report, and list every node asked, answered or not."""
    with tempfile.TemporaryDirectory(prefix="envdoctor-fleet-") as scratch:
        out = Path(scratch) / "answers.jsonl"
        result = run_driver(address, out, python, probe, timeout, on_answer)
        lines = driver_lines(out, address, result)
        asked = next(lines)["nodes"]
        try:
            private_folder(report_dir)
        except OSError as error:
            raise UsageError(f"cannot create {report_dir}: {error.strerror or error}") from None
        answered = {answer["node_id"]: saved(answer, report_dir) for answer in lines}
    waited = f"within {answer_deadline_s(timeout):.0f} s" if result.ok else f"before the Ray driver {result.describe()}"
    return [
        answered.get(node["node_id"]) or NodeSource(node_name(node), None, node, f"no answer {waited}")
        for node in asked
    ]
