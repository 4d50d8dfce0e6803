# expect: run.exception nan-to-int confirmed
# A NaN from a policy output turned into a discrete action index.
import math
logits = [0.1, float("inf"), 0.3]
probs = [math.exp(x) / sum(math.exp(y) for y in logits) for x in logits]
action = int(probs[1] * len(logits))
print(action)
