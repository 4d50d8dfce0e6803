# expect: run.exception torch-file-truncated confirmed
# A checkpoint cut short (a copy interrupted half way).
import torch
torch.save({"w": torch.zeros(1000)}, "ckpt.pt")
data = open("ckpt.pt", "rb").read()
open("ckpt.pt", "wb").write(data[: len(data) // 2])
torch.load("ckpt.pt")
