# expect: run.exception spawn-bootstrap confirmed
# SubprocVecEnv started at the script's top level: its forkserver workers re-import this script and
# refuse to start processes while they bootstrap; the main process then loses its pipes to them.
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import SubprocVecEnv

env = make_vec_env("CartPole-v1", n_envs=2, vec_env_cls=SubprocVecEnv)
env.reset()
