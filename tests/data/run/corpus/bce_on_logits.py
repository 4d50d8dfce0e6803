# expect: run.exception bce-range confirmed
# Raw logits given to BCELoss, which needs probabilities in [0, 1].
import torch
logits = torch.tensor([2.5, -1.0, 0.3])
print(torch.nn.BCELoss()(logits, torch.tensor([1.0, 0.0, 1.0])))
