"""Load ARS models with the real sb3-contrib, predict on fixed observations, train each a little.

Usage: python load_ars.py MODEL.zip [MODEL.zip ...]. Prints one JSON line: for each model, the deterministic
actions on 16 fixed observations and the noise its loaded delta_std_schedule gives. THIS EXECUTES THE FILES'
PICKLES: run it only in a child process.
"""

import json
import sys

import numpy as np
from sb3_contrib import ARS
from stable_baselines3.common.envs import IdentityEnvBox


def main(paths):
    result = {}
    for path in paths:
        model = ARS.load(path, device="cpu")
        observations = np.random.default_rng(0).uniform(-1, 1, (16,) + model.observation_space.shape).astype(np.float32)
        actions, _ = model.predict(observations, deterministic=True)
        model.set_env(IdentityEnvBox(ep_length=4))
        model.learn(8)
        result[path] = {"actions": actions.tolist(), "delta_std": float(model.delta_std_schedule(1.0))}
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
