"""Load a model with the real SB3 and predict on fixed observations: the ground truth for the tests.

Usage: python load_model.py ALGO MODEL.zip [CUSTOM_OBJECTS_JSON] [--learn]. Prints one JSON line:
the deterministic actions on 32 fixed observations, the learning rate and clip range the loaded model
uses, and the warnings SB3 raised. THIS EXECUTES THE FILE'S PICKLES: run it only in a child process.
"""

import json
import sys
import warnings

import numpy as np
from fixture_env import MaskedEnv
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO

ALGORITHMS = {"MaskablePPO": MaskablePPO, "PPO": PPO}


def main(argv):
    algo, path = ALGORITHMS[argv[0]], argv[1]
    custom = json.loads(argv[2]) if len(argv) > 2 and not argv[2].startswith("--") else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = algo.load(path, custom_objects=custom, device="cpu")
    obs = np.random.default_rng(0).uniform(-1, 1, (32, 4)).astype(np.float32)
    kwargs = {"action_masks": np.tile([True, True, False], (32, 1))} if algo is MaskablePPO else {}
    actions, _ = model.predict(obs, deterministic=True, **kwargs)
    result = {
        "actions": actions.tolist(),
        "lr": model.learning_rate if isinstance(model.learning_rate, (int, float)) else repr(model.learning_rate),
        "clip_range": model.clip_range(1.0) if "--learn" not in argv else None,
        "warnings": [str(w.message)[:200] for w in caught if "deserialize" in str(w.message)],
    }
    if "--learn" in argv:
        model.set_env(MaskedEnv())
        model.learn(64)
        result["learned"] = True
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
