# expect: run.exception shape-mismatch confirmed
# An observation with another size than the policy network was built for.
import torch
policy = torch.nn.Linear(8, 2)
policy(torch.zeros(1, 6))
