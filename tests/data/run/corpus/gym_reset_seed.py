# expect: run.exception gym-reset-api confirmed
# An environment with the old gym reset() (no seed), trained by SB3 2.x.
import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv

class OldResetEnv(gym.Env):
    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self):
        return np.zeros(2, np.float32)

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, True, False, {}

DummyVecEnv([OldResetEnv]).reset()
