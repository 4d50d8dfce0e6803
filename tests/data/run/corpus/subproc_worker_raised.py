# expect: run.exception worker-error confirmed
"""A SubprocVecEnv whose environment raises in step(): the worker prints its traceback and dies, and the
main process fails with a bare EOFError reading from it. The worker's exception is the failure."""
import gymnasium as gym
from stable_baselines3.common.vec_env import SubprocVecEnv


class Simulator(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,))
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        raise RuntimeError("simulator lost connection to the physics server")


if __name__ == "__main__":
    env = SubprocVecEnv([Simulator, Simulator])
    env.reset()
    env.step([0, 1])
