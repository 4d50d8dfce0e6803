# expect: run.exception env-obs-space confirmed
# A custom environment that declares 4 numbers but returns 5 (a feature added to reset and step, not to the space).
import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3 import PPO


class Grid(gym.Env):
    observation_space = spaces.Box(0, 1, shape=(4,), dtype=np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        return np.zeros(5, dtype=np.float32), {}

    def step(self, action):
        return np.zeros(5, dtype=np.float32), 0.0, False, False, {}


PPO("MlpPolicy", Grid(), n_steps=16, batch_size=16).learn(32)
