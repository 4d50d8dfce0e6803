"""The Ray driver, run as a child of the doctor: one `check` task pinned to every alive node.

Run as `python -m envdoctor.fleet.ray_driver --address ADDR --timeout S --out FILE [--python PATH] [--no-probe]`.
It lives in its own process because Ray is a heavy native runtime that may hang on a bad address:
the doctor keeps its principle of importing nothing of the kind and bounds the whole run with a timeout.
It writes one JSON document to FILE: {"nodes": [{node_id, hostname, address, resources, report, error}]}.
"""

from __future__ import annotations

import argparse
import json
from typing import List

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from envdoctor.fleet.node_task import run_check

# Resources every node has; the rest (GPU, custom ones such as a rack or node-type label) tell nodes apart.
BOOKKEEPING_RESOURCES = ("memory", "object_store_memory")
SCHEDULING_MARGIN_S = 30.0  # for starting a worker process on a busy node, on top of the check's own timeout


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


def check_every_node(python, probe: bool, timeout: float) -> List[dict]:
    """Each alive node's description with its report text or the reason it has none."""
    nodes = [describe(n) for n in ray.nodes() if n.get("Alive")]
    task = ray.remote(num_cpus=0, max_retries=0)(run_check)
    refs = [
        task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=n["node_id"], soft=False)).remote(python, probe, timeout)
        for n in nodes
    ]
    ray.wait(refs, num_returns=len(refs), timeout=timeout + SCHEDULING_MARGIN_S)
    results = []
    for node, ref in zip(nodes, refs):
        try:
            outcome = ray.get(ref, timeout=0)
        except ray.exceptions.GetTimeoutError:
            ray.cancel(ref, force=True)
            outcome = {"report": None, "error": f"no answer within {timeout + SCHEDULING_MARGIN_S:.0f}s"}
        except ray.exceptions.RayError as error:
            outcome = {"report": None, "error": error_line(error)}
        ran_elsewhere = outcome.get("node_id", node["node_id"]) != node["node_id"]
        if ran_elsewhere:
            outcome = {"report": None, "error": f"the task ran on node {outcome['node_id']} instead"}
        results.append({**node, "hostname": outcome.get("hostname") or node["hostname"], "report": outcome["report"], "error": outcome["error"]})
    return results


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
        nodes = check_every_node(args.python, not args.no_probe, args.timeout)
    finally:
        ray.shutdown()
    with open(args.out, "w", encoding="utf-8") as stream:
        json.dump({"nodes": nodes}, stream)


if __name__ == "__main__":
    main()
