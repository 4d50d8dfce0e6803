# expect: run.exception is-a-directory confirmed
# The checkpoint folder given to torch.load instead of the file inside it.
import os
import torch
os.makedirs("checkpoints/step_1000", exist_ok=True)
state = torch.load("checkpoints/step_1000")
