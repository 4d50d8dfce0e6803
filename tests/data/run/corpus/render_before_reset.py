# expect: run.exception gym-render-before-reset confirmed
# A first frame rendered for a video before the environment was reset.
import gymnasium as gym
env = gym.make("CartPole-v1", render_mode="rgb_array")
frame = env.render()
