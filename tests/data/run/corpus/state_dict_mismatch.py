# expect: run.exception state-dict-mismatch confirmed
# Weights of a network with another hidden size, loaded into the one built here.
import torch
saved = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.Linear(64, 2)).state_dict()
model = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.Linear(32, 2))
model.load_state_dict(saved)
