# expect: run.exception dist-not-initialized confirmed
# Distributed training code run with plain python instead of torchrun.
import torch.distributed as dist
rank = dist.get_rank()
