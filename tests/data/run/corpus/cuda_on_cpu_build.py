# expect: run.exception cpu-torch-asked-for-cuda confirmed
# A CPU-only torch asked to put the model on the GPU.
import torch
torch.nn.Linear(2, 2).to(torch.zeros(1).cuda().device)
