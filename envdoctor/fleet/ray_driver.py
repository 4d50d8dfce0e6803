"""The Ray driver, run as a child of the doctor: one `check` task pinned to every alive node.

Run as `python -m envdoctor.fleet.ray_driver --address ADDR --timeout S --out FILE [--python PATH] [--no-probe]`.
It lives in its own process because Ray is a heavy native runtime that may hang on a bad address:
the doctor keeps its principle of importing nothing of the kind and bounds the whole run with a timeout.

FILE gets JSON lines as things happen, so whatever answered counts even if the driver is stopped:
first {"nodes": [{node_id, hostname, address, resources}]}, the alive nodes asked, then one
{node_id, hostname, address, resources, report, error} per node as it answers. Each answer is also
announced on stdout (`PROGRESS ANSWERED TOTAL HOSTNAME`) for the doctor's progress display. A node
that has not answered within its timeout is not waited for; the doctor lists it as not answering.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import IO, List

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from envdoctor.fleet.node_task import PROGRESS, answer_deadline_s, run_check

# Resources every node has; the rest (GPU, custom ones such as a rack or node-type label) tell nodes apart.
BOOKKEEPING_RESOURCES = ("memory", "object_store_memory")


def describe(node: dict) -> dict:
    resources = {k: v for k, v in node.get("Resources", {}).items() if k not in BOOKKEEPING_RESOURCES and not k.startswith("node:")}
    return {
        "node_id": node["NodeID"],
        "hostname": node.get("NodeManagerHostname", ""),
        "address": node.get("NodeManagerAddress", ""),
        "resources": resources,
    }


def error_line(error: BaseException) -> str:
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[-1] if lines else ''}"


def write_line(out: IO[str], document: dict) -> None:
    out.write(json.dumps(document) + "\n")
    out.flush()


def outcome_of(ref, node: dict) -> dict:
    """The node with its report text, or the reason it has none."""
    try:
        outcome = ray.get(ref, timeout=0)
    except ray.exceptions.RayError as error:
        outcome = {"report": None, "error": error_line(error)}
    if outcome.get("node_id", node["node_id"]) != node["node_id"]:
        outcome = {"report": None, "error": f"the task ran on node {outcome['node_id']} instead"}
    return {**node, "hostname": outcome.get("hostname") or node["hostname"], "report": outcome["report"], "error": outcome["error"]}


def check_every_node(python, probe: bool, timeout: float, out: IO[str]) -> None:
    """Ask every alive node, and record each answer as it comes until the nodes' time is up."""
    nodes: List[dict] = [describe(n) for n in ray.nodes() if n.get("Alive")]
    write_line(out, {"nodes": nodes})
    task = ray.remote(num_cpus=0, max_retries=0)(run_check)
    asked = {
        task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=n["node_id"], soft=False)).remote(python, probe, timeout): n
        for n in nodes
    }
    deadline = time.monotonic() + answer_deadline_s(timeout)
    pending, answered = list(asked), 0
    while pending and time.monotonic() < deadline:
        done, pending = ray.wait(pending, num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
        for ref in done:
            answer = outcome_of(ref, asked[ref])
            write_line(out, answer)
            answered += 1
            print(PROGRESS, answered, len(nodes), answer["hostname"] or answer["node_id"], flush=True)
    for ref in pending:
        ray.cancel(ref, force=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m envdoctor.fleet.ray_driver")
    parser.add_argument("--address", required=True)
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--python")
    parser.add_argument("--no-probe", action="store_true")
    args = parser.parse_args()
    ray.init(address=args.address, logging_level="ERROR", log_to_driver=False, configure_logging=False)
    try:
        with open(args.out, "w", encoding="utf-8") as out:
            check_every_node(args.python, not args.no_probe, args.timeout, out)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
