# expect: run.out-of-memory - confirmed
# A replay buffer sized with the frame stack as an extra 64-wide axis: terabytes asked for at once.
import numpy as np

observations = np.zeros((1_000_000, 84, 84, 4, 64), dtype=np.float32)
