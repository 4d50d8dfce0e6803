# expect: run.exception open-files confirmed
# DataLoader batches kept in a list under a container's open-file limit: each holds a worker's file descriptor.
import resource
import torch
from torch.utils.data import DataLoader, Dataset

resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

class Frames(Dataset):
    def __len__(self):
        return 100000
    def __getitem__(self, i):
        return torch.zeros(4)

if __name__ == "__main__":
    kept = []
    for batch in DataLoader(Frames(), batch_size=1, num_workers=2):
        kept.append(batch)
