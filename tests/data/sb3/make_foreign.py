"""Cloudpickle SB3-style schedules under ANOTHER Python (needs only cloudpickle there), print them as JSON.

Real SB3 does not run on every pyenv interpreter here (torch's CPU wheel exists for 3.11 only), so the
foreign payloads are made the honest way: this script runs under e.g. Python 3.12 with cloudpickle,
builds the same closure and lambda as make_models.py, and wraps them in a stand-in
`stable_baselines3.common.utils.FloatSchedule` registered in sys.modules, so the wrapper is pickled BY
REFERENCE exactly as SB3 pickles its own. The test splices the base64 into a copy of a real model's
`data` (SB3's `:serialized:` format) and sets system_info.txt's Python line to this interpreter's.
Python 3.8 syntax.
"""

import base64
import json
import platform
import sys
import types

import cloudpickle


def stand_in_float_schedule():
    for name in ("stable_baselines3", "stable_baselines3.common", "stable_baselines3.common.utils"):
        sys.modules[name] = types.ModuleType(name)

    class FloatSchedule:
        def __init__(self, value_schedule):
            self.value_schedule = value_schedule

    FloatSchedule.__module__ = "stable_baselines3.common.utils"
    FloatSchedule.__qualname__ = "FloatSchedule"
    sys.modules["stable_baselines3.common.utils"].FloatSchedule = FloatSchedule
    return FloatSchedule


def linear_schedule(initial_value):
    def func(progress_remaining: float) -> float:
        return progress_remaining * initial_value

    return func


def encode(value):
    return base64.b64encode(cloudpickle.dumps(value)).decode()


def main():
    FloatSchedule = stand_in_float_schedule()
    lr = linear_schedule(3e-4)
    print(json.dumps({
        "python": platform.python_version(),
        "cloudpickle": cloudpickle.__version__,
        "learning_rate": encode(lr),
        "lr_schedule": encode(FloatSchedule(lr)),
        "clip_range": encode(FloatSchedule(lambda _: 0.1)),
    }))


main()
