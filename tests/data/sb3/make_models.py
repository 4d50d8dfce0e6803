"""Save the real SB3 test models with the real stable-baselines3 / sb3-contrib (run in a child process).

Usage: python make_models.py OUT_DIR. Every model is tiny (64-step rollouts, a 4-dim observation),
saved by the running Python, so its `system_info.txt` and code objects match the interpreter.
- mppo_closure.zip: MaskablePPO, learning_rate = a closure (the SB3 docs' linear_schedule(3e-4)),
  clip_range = lambda _: 0.1: both pickled BY VALUE;
- mppo_plain.zip: MaskablePPO with plain floats (by-reference FloatSchedule(ConstantSchedule));
- ppo_closure.zip: PPO with a closure lr (1e-3) and lambdas for clip_range (0.15) and clip_range_vf (0.5);
- mppo_byref.zip: learning_rate from an importable module (sb3_fixture_schedules.decaying_lr), pickled BY
  REFERENCE;
- mppo_custom_extractor.zip: policy_kwargs holds a features extractor class defined in __main__ (by value).
"""

import sys
from pathlib import Path

import torch as th
from fixture_env import MaskedEnv
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

sys.path.insert(0, str(Path(__file__).resolve().parent / "user_code"))
from sb3_fixture_schedules import decaying_lr  # noqa: E402


def linear_schedule(initial_value):
    def func(progress_remaining: float) -> float:
        return progress_remaining * initial_value

    return func


class TinyExtractor(BaseFeaturesExtractor):
    def __init__(self, observation_space, features_dim=8):
        super().__init__(observation_space, features_dim)
        self.linear = th.nn.Linear(observation_space.shape[0], features_dim)

    def forward(self, observations):
        return th.relu(self.linear(observations))


def save(model, out: Path, name: str) -> None:
    model.learn(128)
    model.save(out / name)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    common = dict(n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu")
    env = MaskedEnv()
    save(MaskablePPO("MlpPolicy", env, learning_rate=linear_schedule(3e-4), clip_range=lambda _: 0.1, **common), out, "mppo_closure.zip")
    save(MaskablePPO("MlpPolicy", env, **common), out, "mppo_plain.zip")
    save(PPO("MlpPolicy", env, learning_rate=linear_schedule(1e-3), clip_range=lambda _: 0.15, clip_range_vf=lambda _: 0.5, **common), out, "ppo_closure.zip")
    save(MaskablePPO("MlpPolicy", env, learning_rate=decaying_lr, **common), out, "mppo_byref.zip")
    kwargs = dict(features_extractor_class=TinyExtractor, features_extractor_kwargs=dict(features_dim=8))
    save(MaskablePPO("MlpPolicy", env, policy_kwargs=kwargs, **common), out, "mppo_custom_extractor.zip")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
