# expect: run.exception maskable-no-masks confirmed
# MaskablePPO trained on an environment that exposes no action masks (no ActionMasker wrapper).
import gymnasium as gym
from sb3_contrib import MaskablePPO

model = MaskablePPO("MlpPolicy", gym.make("CartPole-v1"), n_steps=64, batch_size=32, device="cpu")
model.learn(total_timesteps=64)
