# expect: run.exception numpy-of-grad confirmed
# A network output logged with .numpy() while it still requires grad.
import torch
value = torch.nn.Linear(2, 1)(torch.ones(1, 2))
print(value.numpy())
