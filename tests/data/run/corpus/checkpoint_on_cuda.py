# expect: run.exception checkpoint-on-cuda confirmed
# A checkpoint whose storages were saved on cuda:0 (tagged the way a GPU save tags them), loaded on a machine without CUDA.
import torch
import torch.serialization as serialization

serialization.register_package(1, lambda storage: "cuda:0", lambda storage, location: None)
torch.save({"weight": torch.zeros(3)}, "gpu_checkpoint.pt")
serialization._package_registry[:] = [p for p in serialization._package_registry if p[0] != 1]
torch.load("gpu_checkpoint.pt")
