# expect: run.exception gym-api-new-step likely
# A training loop written for gym < 0.26 (four values from step) stepping a Gymnasium environment.
import gymnasium as gym
env = gym.make("CartPole-v1")
obs, info = env.reset(seed=0)
obs, reward, done, info = env.step(env.action_space.sample())
