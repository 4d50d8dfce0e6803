"""GPU memory used/total per GPU while the command runs, read by a child process (NVML, else nvidia-smi).

The reader is a child so that a broken driver cannot take the doctor down; its lines are parsed in a
thread of the doctor and stamped with the doctor's clock, so they share the memory timeline's axis.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from typing import List, Optional

from envdoctor import host, package_data
from envdoctor.capture.timeline import Timeline
from envdoctor.collect.gpu import nvml_child
from envdoctor.proc.children import kill_family, start_child

MIB = 1 << 20
DEVICE_NODES = ("/dev/nvidiactl", "/dev/dxg")  # Linux driver, WSL2 GPU paravirtualisation


def nvml_sampler(interval: float) -> List[str]:
    """The NVML reader's command line, started as the NVML query is (inside the zipapp too, where
    `-m envdoctor...` would find nothing)."""
    return nvml_child(package_data.read_text(__package__, "nvml_sampler.py"), str(interval))


class GpuSampler:
    """Starts a GPU memory reader and records its samples; `facts()` says what was seen or why nothing was."""

    def __init__(self, started: float, interval: float):
        self.started = started
        self.interval = interval
        self.timeline = Timeline()
        self.devices: List[dict] = []
        self.source: Optional[str] = None
        self.problems: List[str] = []
        self.process: Optional[subprocess.Popen] = None
        self.thread: Optional[threading.Thread] = None
        self.batch: List[List[str]] = []

    def start(self) -> None:
        if not any(host.exists(node) for node in DEVICE_NODES):
            self.problems.append("no NVIDIA device nodes (" + ", ".join(DEVICE_NODES) + ")")
            return
        self.thread = threading.Thread(target=self.read_all, name="envdoctor-gpu", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        if self.process is not None:
            kill_family(self.process)
        if self.thread is not None:
            self.thread.join(timeout=5)

    def read_all(self) -> None:
        """NVML first; when it cannot start, nvidia-smi's own polling loop."""
        self.read(self.spawn(nvml_sampler(self.interval)), "nvml", self.nvml_line)
        if self.source is None and shutil.which("nvidia-smi"):
            query = "--query-gpu=count,index,name,memory.used,memory.total"
            argv = ["nvidia-smi", query, "--format=csv,noheader,nounits", f"-lms={max(100, int(self.interval * 1000))}"]
            self.read(self.spawn(argv), "nvidia-smi", self.smi_line)

    def spawn(self, argv: List[str]) -> Optional[subprocess.Popen]:
        try:
            self.process = start_child(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError as error:
            self.problems.append(f"{argv[0]}: {error}")
            self.process = None
        return self.process

    def read(self, process: Optional[subprocess.Popen], source: str, parse) -> None:
        if process is None:
            return
        for line in process.stdout:
            try:
                parse(line, source)
            except (ValueError, KeyError, IndexError) as error:
                self.problems.append(f"{source}: unreadable line {line.strip()!r}: {error}")
                break
        process.wait()

    def now(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def nvml_line(self, line: str, source: str) -> None:
        document = json.loads(line)
        if "error" in document:
            self.problems.append(f"{source}: {document['error']}")
        elif "devices" in document:
            self.devices, self.source = document["devices"], source
        else:
            self.timeline.add({"t": self.now(), "gpu_used_bytes": list(document["used"])})

    def smi_line(self, line: str, source: str) -> None:
        count, index, name, used, total = [field.strip() for field in line.split(",")]
        self.batch.append([index, name, used, total])
        if len(self.batch) < int(count):
            return
        batch, self.batch = sorted(self.batch, key=lambda row: int(row[0])), []
        if self.source is None:
            self.devices = [{"index": int(i), "name": n, "total_bytes": int(t) * MIB} for i, n, _, t in batch]
            self.source = source
        self.timeline.add({"t": self.now(), "gpu_used_bytes": [int(u) * MIB for _, _, u, _ in batch]})

    def facts(self) -> dict:
        return {"source": self.source, "devices": self.devices, "samples": self.timeline.samples, "problems": self.problems}
