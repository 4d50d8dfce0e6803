# expect: run.exception numpy-allow-pickle confirmed
# A replay buffer saved as an object array, read back with np.load's default allow_pickle=False.
import numpy as np
episodes = np.empty(2, dtype=object)
episodes[0], episodes[1] = [1, 2, 3], [4, 5]
np.save("episodes.npy", episodes)
print(np.load("episodes.npy"))
