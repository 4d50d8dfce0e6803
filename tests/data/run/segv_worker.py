"""A screen-capture thread segfaults after a few frames while the main thread loops (seed 001)."""
import ctypes
import threading
import time


def capture_frames():
    for frame in range(3):
        print(f"captured frame {frame}", flush=True)
        time.sleep(0.05)
    ctypes.string_at(0)


threading.Thread(target=capture_frames, name="capture", daemon=True).start()
step = 0
while True:
    step += 1
    time.sleep(0.01)
