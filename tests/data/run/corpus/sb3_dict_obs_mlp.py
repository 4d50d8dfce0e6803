# expect: run.exception sb3-multi-input confirmed
# An environment with a Dict observation space given to MlpPolicy.
import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3 import PPO


class GoalEnv(gym.Env):
    observation_space = spaces.Dict({"position": spaces.Box(-1, 1, (2,), np.float32), "goal": spaces.Box(-1, 1, (2,), np.float32)})
    action_space = spaces.Discrete(4)

    def reset(self, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


PPO("MlpPolicy", GoalEnv(), device="cpu")
