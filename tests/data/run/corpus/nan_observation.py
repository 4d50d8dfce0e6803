# expect: run.exception nan-distribution confirmed
# NaN observations reach the policy (a sensor that returned NaN): its action distribution gets NaN logits.
import numpy as np
from stable_baselines3 import PPO
model = PPO("MlpPolicy", "CartPole-v1")
model.predict(np.full(4, np.nan, dtype=np.float32))
