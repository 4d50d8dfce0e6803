# expect: run.exception file-not-found confirmed
# A checkpoint path relative to another working directory.
import torch
torch.load("checkpoints/best_model.pt")
