# expect: run.exception sb3-obs-shape confirmed
# A policy for CartPole (4 numbers) asked to act on an observation of another shape.
import numpy as np
from stable_baselines3 import PPO
model = PPO("MlpPolicy", "CartPole-v1")
model.predict(np.zeros(3, dtype=np.float32))
