"""Prints one line, then the main thread waits forever on a lock a worker thread holds."""
import threading
import time

lock = threading.Lock()


def hold_the_lock():
    with lock:
        time.sleep(3600)


threading.Thread(target=hold_the_lock, name="holder", daemon=True).start()
time.sleep(0.1)
print("waiting for the lock", flush=True)
with lock:
    pass
