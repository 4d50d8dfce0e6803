# expect: run.exception torchscript-not-archive confirmed
# A state dict saved with torch.save, loaded with torch.jit.load as if it were TorchScript.
import torch
torch.save(torch.nn.Linear(4, 2).state_dict(), "policy.pt")
policy = torch.jit.load("policy.pt")
