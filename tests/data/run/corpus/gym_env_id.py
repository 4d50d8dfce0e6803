# expect: run.exception gym-env-id confirmed
# An environment id whose package is not installed here.
import gymnasium as gym
gym.make("HalfCheetahBulletEnv-v0")
