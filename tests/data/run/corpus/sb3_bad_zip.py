# expect: run.exception bad-zip confirmed
# A model download cut short: SB3 cannot open it as a zip.
from stable_baselines3 import PPO
open("ppo_cartpole.zip", "wb").write(b"PK\x03\x04" + b"\x00" * 64)
PPO.load("ppo_cartpole.zip")
