# expect: run.exception collate-unequal confirmed
# Episodes of different lengths batched by the DataLoader's default collate.
import torch
from torch.utils.data import DataLoader, Dataset

class Episodes(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        return torch.zeros(10 + index, 3)

for batch in DataLoader(Episodes(), batch_size=2):
    print(batch.shape)
