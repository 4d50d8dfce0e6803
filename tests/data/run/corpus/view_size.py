# expect: run.exception view-size confirmed
# A frame stack reshaped as if it held one more frame than it does.
import torch
frames = torch.zeros(3 * 84)
frames.view(4, 84)
