"""Native code gives up: abort() through libc, as a failed C++ assertion would."""
import ctypes

print("about to abort", flush=True)
ctypes.CDLL(None).abort()
