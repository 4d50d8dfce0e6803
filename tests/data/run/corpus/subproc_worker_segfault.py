# expect: run.exception worker-crash confirmed
"""A SubprocVecEnv whose second environment wraps a native library that segfaults in step(): the worker
dies of the signal (faulthandler writes its stack), the main process only sees its pipe close."""
import ctypes

import gymnasium as gym
from stable_baselines3.common.vec_env import SubprocVecEnv


class Simulator(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,))
    action_space = gym.spaces.Discrete(2)

    def __init__(self, native=False):
        self.native = native

    def reset(self, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        if self.native:
            ctypes.string_at(0)  # the native library dereferencing a null pointer
        return self.observation_space.sample(), 0.0, False, False, {}


if __name__ == "__main__":
    env = SubprocVecEnv([Simulator, lambda: Simulator(native=True)])
    env.reset()
    env.step([0, 1])
