# expect: run.exception weights-only confirmed
# A checkpoint holding a config object, loaded under torch.load's weights_only default (True since 2.6).
import torch

class TrainConfig:
    gamma = 0.99

torch.save({"weights": torch.zeros(2), "config": TrainConfig()}, "ckpt.pt")
torch.load("ckpt.pt")
