"""Sampling the command's whole process tree: RSS, largest address space, CPU, and its memory limits.

Runs in a thread of the doctor at a modest interval; each sample costs a few /proc reads per process.
RSS is summed over the tree (workers forked from the trainer count too; shared pages count twice,
which errs towards warning early).
"""

from __future__ import annotations

import threading
import time
from typing import Dict, List, Optional, Set

from envdoctor.capture.limits import MemoryCgroup, address_space_limit, memory_cgroup
from envdoctor.capture.timeline import Timeline
from envdoctor.proc.processes import psutil


class TreeSampler:
    """Samples the tree under `root_pid` into `timeline` every `interval` seconds until stopped."""

    def __init__(self, root_pid: int, started: float, interval: float):
        self.root_pid = root_pid
        self.started = started
        self.interval = interval
        self.timeline = Timeline()
        self.pids_seen: Set[int] = set()
        self.processes: Dict[int, psutil.Process] = {}
        self.cgroups: Dict[str, dict] = {}
        self.address_space_bytes: Optional[int] = None
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.loop, name="envdoctor-sampler", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()

    def loop(self) -> None:
        while True:
            self.sample()
            if self.stopping.wait(self.interval):
                return

    def tree(self) -> List[psutil.Process]:
        """The live processes of the tree, reusing each one's psutil object so CPU% has a baseline."""
        try:
            root = self.processes.setdefault(self.root_pid, psutil.Process(self.root_pid))
            found = [root] + root.children(recursive=True)
        except psutil.Error:
            return []
        alive = {p.pid: self.processes.get(p.pid, p) for p in found}
        self.processes = alive
        return list(alive.values())

    def sample(self) -> None:
        rss = vms = 0
        cpu = 0.0
        tree = self.tree()
        for process in tree:
            try:
                with process.oneshot():
                    memory = process.memory_info()
                    cpu += process.cpu_percent(None)
            except psutil.Error:
                continue
            rss += memory.rss
            vms = max(vms, memory.vms)
            self.pids_seen.add(process.pid)
            self.note_limits(process)
        if tree:
            self.timeline.add({"t": round(time.monotonic() - self.started, 3), "rss_bytes": rss, "vms_max_bytes": vms, "cpu_percent": round(cpu, 1), "processes": len(tree)})

    def note_limits(self, process: psutil.Process) -> None:
        """Remember the tightest address-space limit and every memory cgroup the tree has lived in."""
        limit = address_space_limit(process)
        if limit is not None and (self.address_space_bytes is None or limit < self.address_space_bytes):
            self.address_space_bytes = limit
        cgroup = memory_cgroup(process.pid)
        if cgroup is not None and str(cgroup.path) not in self.cgroups:
            self.cgroups[str(cgroup.path)] = {"cgroup": cgroup, "oom_kills_before": cgroup.oom_kills()}

    def cgroup_facts(self) -> List[dict]:
        """Each memory cgroup seen: its limit and how many OOM kills it counted during the run."""
        facts = []
        for path, seen in self.cgroups.items():
            cgroup: MemoryCgroup = seen["cgroup"]
            before, after = seen["oom_kills_before"], cgroup.oom_kills()
            facts.append({
                "path": path,
                "version": cgroup.version,
                "limit_bytes": cgroup.limit_bytes(),
                "oom_kills_during_run": None if before is None or after is None else after - before,
            })
        return facts
