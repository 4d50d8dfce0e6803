"""Grows its memory by 8 MiB steps until something stops it (a memory limit set by the test)."""
import time

chunks = []
print("growing", flush=True)
while True:
    chunks.append(bytearray(8 << 20))
    time.sleep(0.02)
