# expect: run.exception gym-reset-needed confirmed
# An environment stepped before its first reset.
import gymnasium as gym
env = gym.make("CartPole-v1")
env.step(0)
