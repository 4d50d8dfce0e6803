"""The tiny masked environment the test models are trained on and predicted with."""

import gymnasium as gym
import numpy as np


class MaskedEnv(gym.Env):
    """Box(4) observations, Discrete(3) actions, the last action always masked."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        return self.observation_space.sample(), float(action == 0), self.t >= 16, False, {}

    def action_masks(self):
        return np.array([True, True, False])
