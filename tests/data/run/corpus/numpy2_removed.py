# expect: run.exception numpy2-removed-name confirmed
# Code written for NumPy 1, which still had np.NaN.
import numpy as np
best = np.NaN
