"""Prints a line, then segfaults in the main thread (a read of address 0 through ctypes)."""
import ctypes

print("loading model", flush=True)
ctypes.string_at(0)
