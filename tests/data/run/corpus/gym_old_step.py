# expect: run.exception gym-api-old-step confirmed
# An environment whose step returns the old gym API's four values, under Gymnasium's TimeLimit.
import gymnasium as gym
import numpy as np

class OldEnv(gym.Env):
    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, {}

env = gym.wrappers.TimeLimit(OldEnv(), max_episode_steps=10)
env.reset()
env.step(0)
