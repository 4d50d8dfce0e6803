# expect: run.exception worker-vanished likely
"""A SubprocVecEnv whose second worker is killed with SIGKILL mid-step, as the kernel's OOM killer
ends a process: it prints nothing, and the main process only sees its pipe close (EOFError)."""
import os
import signal

import gymnasium as gym
from stable_baselines3.common.vec_env import SubprocVecEnv


class Simulator(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,))
    action_space = gym.spaces.Discrete(2)

    def __init__(self, doomed=False):
        self.doomed = doomed

    def reset(self, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        if self.doomed:
            os.kill(os.getpid(), signal.SIGKILL)
        return self.observation_space.sample(), 0.0, False, False, {}


if __name__ == "__main__":
    env = SubprocVecEnv([Simulator, lambda: Simulator(doomed=True)])
    env.reset()
    env.step([0, 1])
