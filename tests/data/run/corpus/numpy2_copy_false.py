# expect: run.exception numpy-copy-false confirmed
# Code written for NumPy 1 asks np.array(..., copy=False) of a list: NumPy 2 refuses where a copy is needed.
import numpy as np
rewards = [0.0, 1.0, 0.5]
returns = np.array(rewards, copy=False)
print(returns.sum())
