# expect: run.exception sb3-predict-tuple confirmed
# Gymnasium's reset returns (obs, info); the tuple goes to model.predict as if it were the observation.
import gymnasium as gym
from stable_baselines3 import PPO

env = gym.make("CartPole-v1")
model = PPO("MlpPolicy", env, n_steps=64, device="cpu")
obs = env.reset(seed=0)
action, _ = model.predict(obs, deterministic=True)
print(action)
