# expect: run.exception gym-api-old-step confirmed
"""An environment written for the old gym API (step returns four values) run in SubprocVecEnv: the
worker dies unpacking five, and the main process only sees its pipe close (EOFError)."""
import gymnasium as gym
from stable_baselines3.common.vec_env import SubprocVecEnv


class OldApi(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,))
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, {}


if __name__ == "__main__":
    env = SubprocVecEnv([OldApi, OldApi])
    env.reset()
    env.step([0, 1])
