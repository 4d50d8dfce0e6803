# expect: run.exception batchnorm-one confirmed
# A critic with BatchNorm updated on a single transition in training mode.
import torch
critic = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
value = critic(torch.zeros(1, 4))
print(value)
