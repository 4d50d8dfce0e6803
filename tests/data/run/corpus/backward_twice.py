# expect: run.exception autograd-twice confirmed
# A loss kept from the previous step and backpropagated again.
import torch
w = torch.ones(3, requires_grad=True)
loss = (w.exp() * 2).sum()
loss.backward()
loss.backward()
