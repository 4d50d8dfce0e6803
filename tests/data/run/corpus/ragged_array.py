# expect: run.exception ragged-array confirmed
# Observations of different lengths stacked into one array (NumPy >= 1.24 refuses ragged arrays).
import numpy as np
batch = np.array([np.zeros(4), np.zeros(3)])
