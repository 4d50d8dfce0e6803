# expect: run.exception sb3-space-unsupported confirmed
# DQN (discrete actions only) given Pendulum's continuous action space.
import gymnasium as gym
from stable_baselines3 import DQN
DQN("MlpPolicy", gym.make("Pendulum-v1"))
