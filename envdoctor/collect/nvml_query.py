"""Ask NVML about the driver and every GPU, and print the answer as one JSON document.

Run by collect/gpu.py as `python -I -S -c <this source> PYNVML_FOLDER` in a child process with a
timeout (the folder the doctor imports pynvml from goes first on sys.path): NVML loads
the driver's libnvidia-ml, which is part of what is diagnosed and may hang or crash. It imports only
the standard library and nvidia-ml-py (`pynvml`), never envdoctor.
"""

import json
import sys


def text(value):
    """NVML strings are bytes in older nvidia-ml-py releases and str in newer ones."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def decode_cuda_version(encoded):
    """NVML's 1000*major + 10*minor (12040 -> "12.4"); 0 means no libcuda was found."""
    if not encoded:
        return None
    return "%d.%d" % (encoded // 1000, (encoded % 1000) // 10)


def optional(pynvml, query, *args):
    """The query's answer, or None where this GPU or driver does not support it."""
    try:
        return query(*args)
    except pynvml.NVMLError:
        return None


def mig_mode(pynvml, handle):
    modes = optional(pynvml, pynvml.nvmlDeviceGetMigMode, handle)
    if modes is None:
        return None
    return "enabled" if modes[0] == pynvml.NVML_DEVICE_MIG_ENABLE else "disabled"


def processes(pynvml, handle):
    running = optional(pynvml, pynvml.nvmlDeviceGetComputeRunningProcesses, handle) or []
    return [{"pid": p.pid, "used_memory_bytes": p.usedGpuMemory} for p in running]


def gpu_facts(pynvml, index):
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
    capability = optional(pynvml, pynvml.nvmlDeviceGetCudaComputeCapability, handle)
    return {
        "index": index,
        "name": text(pynvml.nvmlDeviceGetName(handle)),
        "compute_capability": "%d.%d" % tuple(capability) if capability else None,
        "memory_total_bytes": memory.total,
        "memory_used_bytes": memory.used,
        "memory_free_bytes": memory.free,
        "mig_mode": mig_mode(pynvml, handle),
        "processes": processes(pynvml, handle),
    }


def cuda_driver_version(pynvml):
    query = getattr(pynvml, "nvmlSystemGetCudaDriverVersion_v2", None) or pynvml.nvmlSystemGetCudaDriverVersion
    return decode_cuda_version(optional(pynvml, query))


def main():
    sys.path[:0] = [folder for folder in sys.argv[1:2] if folder]  # where the doctor finds pynvml
    import pynvml

    pynvml.nvmlInit()
    try:
        facts = {
            "source": "nvml",
            "driver": {"version": text(pynvml.nvmlSystemGetDriverVersion()), "cuda": cuda_driver_version(pynvml)},
            "gpus": [gpu_facts(pynvml, i) for i in range(pynvml.nvmlDeviceGetCount())],
        }
    finally:
        pynvml.nvmlShutdown()
    json.dump(facts, sys.stdout)


if __name__ == "__main__":
    main()
