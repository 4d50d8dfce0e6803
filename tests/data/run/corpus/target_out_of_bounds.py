# expect: run.exception target-out-of-bounds confirmed
# Labels numbered from 1 given to a loss over 3 classes numbered from 0.
import torch
import torch.nn.functional as F
F.cross_entropy(torch.zeros(2, 3), torch.tensor([1, 3]))
