# expect: run.exception dtype-mismatch confirmed
# float64 NumPy observations fed to a float32 network.
import numpy as np
import torch
policy = torch.nn.Linear(4, 2)
policy(torch.from_numpy(np.zeros((1, 4))))
