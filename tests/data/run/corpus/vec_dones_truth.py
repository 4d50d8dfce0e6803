# expect: run.exception numpy-truth-ambiguous confirmed
# A loop written for one environment tests the done flags of a vectorised one as a single bool.
import numpy as np
dones = np.array([False, True, False, False])
if dones:
    print("episode over")
