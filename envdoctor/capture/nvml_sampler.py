"""Run as a child (`python -I -S -c <this source> PYNVML_FOLDER INTERVAL`, capture/gpu.py): prints GPU
memory as JSON lines. Standard library and pynvml only, never envdoctor: the folder the doctor imports
pynvml from goes first on sys.path.

NVML loads the driver's library, which is part of what is diagnosed, so it never runs in the doctor's
process. First line: the devices, or {"error": ...}; then {"used": [bytes per device]} each interval
until the doctor ends this process.
"""

import json
import sys
import time


def emit(document) -> None:
    sys.stdout.write(json.dumps(document) + "\n")
    sys.stdout.flush()


def main(interval: float) -> None:
    try:
        import pynvml

        pynvml.nvmlInit()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        names = [pynvml.nvmlDeviceGetName(h) for h in handles]
    except Exception as error:  # no driver, no library, no device: a fact for the report
        emit({"error": f"{type(error).__name__}: {error}"})
        return
    devices = []
    for index, (handle, name) in enumerate(zip(handles, names)):
        total = pynvml.nvmlDeviceGetMemoryInfo(handle).total
        devices.append({"index": index, "name": name.decode() if isinstance(name, bytes) else name, "total_bytes": total})
    emit({"devices": devices})
    while True:
        emit({"used": [pynvml.nvmlDeviceGetMemoryInfo(h).used for h in handles]})
        time.sleep(interval)


if __name__ == "__main__":
    sys.path[:0] = [folder for folder in sys.argv[1:2] if folder]
    main(float(sys.argv[2]))
