# expect: run.exception numpy-python-int-bounds confirmed
# Pixel arithmetic on a uint8 frame with a Python int beyond 255: NumPy 2 raises where NumPy 1 wrapped.
import numpy as np
frame = np.zeros((84, 84), dtype=np.uint8)
print(frame[0, 0] + 300)
