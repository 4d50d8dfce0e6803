"""GPU facts: the NVIDIA driver, the CUDA version it supports, and each GPU's capability and memory.

NVML is asked in a child process with a timeout (collect/nvml_query.py), since the driver is part of
what is diagnosed; `nvidia-smi` answers when NVML cannot. A machine without an NVIDIA driver is a
plain fact ("source": "none"), found from the driver's files without starting any process.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import re
import shutil
import sys
from typing import List, Mapping, Optional

from envdoctor import host, package_data
from envdoctor.proc.children import run_child

TIMEOUT_S = 15.0
DRIVER_MARKERS = ("/proc/driver/nvidia", "/dev/nvidiactl", "/usr/lib/wsl/lib/libnvidia-ml.so.1")
WSL_LIBRARY_DIR = "/usr/lib/wsl/lib"
SMI_FIELDS = ("index", "name", "compute_cap", "memory.total", "memory.used", "memory.free", "mig.mode.current", "driver_version")
MIB = 2 ** 20


def no_driver(reason: str) -> dict:
    return {"source": "none", "driver": None, "gpus": [], "reason": reason}


def driver_present() -> bool:
    return any(host.exists(marker) for marker in DRIVER_MARKERS)


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def nvml_child(source: str, *args: str) -> List[str]:
    """The command line of a child that talks to NVML (the query here, `run`'s memory reader): isolated
    and without `site` (`-I -S`), so no .pth file, sitecustomize or PYTHONPATH of the user's runs in it
    or stands in for pynvml, and it starts in a fraction of the time (10 against 78 ms on a machine with
    200 distributions); its first argument is where this process finds pynvml."""
    return [sys.executable, "-I", "-S", "-c", source, pynvml_folder(), *args]


def query_nvml() -> dict:
    """NVML's answer, or a `reason` saying why there is none."""
    source = package_data.read_text(__package__, "nvml_query.py")
    result = run_child(nvml_child(source), timeout=TIMEOUT_S)
    if not result.ok:
        return {"reason": f"NVML query {result.describe()}: {last_line(result.stderr)}".rstrip(": ")}
    try:
        return json.loads(result.stdout)
    except ValueError:
        return {"reason": "NVML query printed no JSON"}


def pynvml_folder() -> str:
    """The sys.path entry pynvml is imported from here (a site-packages folder, or the zipapp), "" when
    it is not installed: the query then says so."""
    spec = importlib.util.find_spec("pynvml")
    origin = spec.origin if spec else None
    return os.path.dirname(origin) if origin and origin.endswith("pynvml.py") else ""


def find_nvidia_smi(environ: Mapping[str, str]) -> Optional[str]:
    """nvidia-smi on PATH, or where WSL2's Windows driver projects it."""
    search = os.pathsep.join(p for p in (environ.get("PATH", ""), str(host.path(WSL_LIBRARY_DIR))) if p)
    return shutil.which("nvidia-smi", path=search)


def number(cell: str) -> Optional[float]:
    try:
        return float(cell)
    except ValueError:
        return None


def smi_gpu(fields, cells: List[str]) -> dict:
    row = dict(zip(fields, (c.strip() for c in cells)))
    total, used, free = (number(row.get(k, "")) for k in ("memory.total", "memory.used", "memory.free"))
    mig = row.get("mig.mode.current", "").lower()
    return {
        "index": int(row["index"]),
        "name": row["name"],
        "compute_capability": row.get("compute_cap") if number(row.get("compute_cap", "")) else None,
        "memory_total_bytes": int(total * MIB) if total is not None else None,
        "memory_used_bytes": int(used * MIB) if used is not None else None,
        "memory_free_bytes": int(free * MIB) if free is not None else None,
        "mig_mode": mig if mig in ("enabled", "disabled") else None,
    }


def parse_smi_gpus(fields, text: str) -> List[dict]:
    return [smi_gpu(fields, cells) for cells in csv.reader(io.StringIO(text)) if cells]


def parse_smi_cuda(header: str) -> Optional[str]:
    match = re.search(r"CUDA Version:\s*([0-9]+\.[0-9]+)", header)
    return match.group(1) if match else None


def smi_query(smi: str, fields):
    return run_child([smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"], timeout=TIMEOUT_S)


def query_nvidia_smi(smi: str) -> dict:
    """The same facts from nvidia-smi's CSV query and its header (which shows the driver's CUDA).

    Drivers before R510 do not know the compute_cap field, so the query is retried without it.
    """
    fields = SMI_FIELDS
    query = smi_query(smi, fields)
    if not query.ok and "compute_cap" in query.stdout + query.stderr:
        fields = tuple(f for f in SMI_FIELDS if f != "compute_cap")
        query = smi_query(smi, fields)
    if not query.ok:
        return {"reason": f"nvidia-smi {query.describe()}: {last_line(query.stdout + query.stderr)}".rstrip(": ")}
    gpus = parse_smi_gpus(fields, query.stdout)
    header = run_child([smi], timeout=TIMEOUT_S)
    version = next((line.split(",")[-1].strip() for line in query.stdout.splitlines() if line.strip()), None)
    return {
        "source": "nvidia-smi",
        "driver": {"version": version, "cuda": parse_smi_cuda(header.stdout)},
        "gpus": gpus,
    }


def collect(ctx) -> dict:
    if not driver_present():
        return no_driver("no NVIDIA driver (no /proc/driver/nvidia, no /dev/nvidiactl, no libnvidia-ml)")
    nvml = {"reason": "NVML is not asked under ENVDOCTOR_ROOT (it would read this machine's driver)"} if host.is_rerooted() else query_nvml()
    if "reason" not in nvml:
        return nvml
    smi = find_nvidia_smi(ctx.environ)
    if smi is None:
        return no_driver(f"{nvml['reason']}; nvidia-smi not found")
    answer = query_nvidia_smi(smi)
    if "reason" in answer:
        return no_driver(f"{nvml['reason']}; {answer['reason']}")
    return {**answer, "nvml_failure": nvml["reason"]}
