# expect: run.exception index-out-of-range confirmed
# An action id beyond the embedding table the model was built with.
import torch
actions = torch.nn.Embedding(10, 4)
actions(torch.tensor([12]))
