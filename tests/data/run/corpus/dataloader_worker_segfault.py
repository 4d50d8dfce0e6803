# expect: run.exception worker-segfault confirmed
# A dataset whose native frame decoder crashes inside a DataLoader worker: the main process only sees the worker gone.
import ctypes

import torch
from torch.utils.data import DataLoader, Dataset


class Frames(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        ctypes.string_at(0)  # the decoder reads a null frame pointer
        return torch.zeros(3)


if __name__ == "__main__":
    for batch in DataLoader(Frames(), batch_size=2, num_workers=2):
        pass
