# expect: run.exception missing-library confirmed
# A native plugin whose shared library is not installed here.
import ctypes
ctypes.CDLL("libphysx_gpu.so.5")
