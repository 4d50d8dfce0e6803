# expect: run.exception import-name likely
# Code written for another version of a library: the name it imports is not there.
from stable_baselines3.common.vec_env import SubprocVecEnvV2
