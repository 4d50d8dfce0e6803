# expect: run.exception autograd-no-grad confirmed
# A loss computed under torch.no_grad().
import torch
model = torch.nn.Linear(2, 1)
with torch.no_grad():
    loss = model(torch.ones(1, 2)).sum()
loss.backward()
