# expect: run.exception numpy-removed-alias confirmed
# Code written for NumPy < 1.24, which still had np.float.
import numpy as np
rewards = np.zeros(4, dtype=np.float)
