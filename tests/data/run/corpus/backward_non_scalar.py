# expect: run.exception grad-scalar confirmed
# The per-sample losses passed to backward() without reducing them to one number.
import torch
net = torch.nn.Linear(4, 1)
losses = (net(torch.randn(8, 4)) - torch.ones(8, 1)) ** 2
losses.backward()
