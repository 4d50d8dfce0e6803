"""Option types that keep every limit the user sets finite and sane.

A float option accepts "nan" and "inf", and NaN compares false with everything, so a bare
`FloatRange` or `value <= 0` check lets `--probe-timeout nan` switch a time limit off and
`--sample-interval 1e-9` turn a sampler into a busy loop. `Seconds` refuses both with the one-line
usage error every other bad input gets.
"""

from __future__ import annotations

import math
from typing import Optional

import click

from envdoctor.errors import UsageError

DAY_S = 24 * 3600.0
WEEK_S = 7 * DAY_S


class Seconds(click.ParamType):
    """A finite number of seconds within [minimum, maximum]."""

    name = "seconds"

    def __init__(self, minimum: float, maximum: float):
        self.minimum = minimum
        self.maximum = maximum

    def convert(self, value, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or not self.minimum <= number <= self.maximum:
            raise UsageError(f"{option_name(param)} must be a number of seconds from {self.minimum:g} to {self.maximum:g}, not {shown(value)}")
        return number


def option_name(param: Optional[click.Parameter]) -> str:
    """The option's longest spelling, as the user typed it (`--probe-timeout`)."""
    return max(param.opts, key=len) if param is not None and param.opts else "the value"


def shown(value) -> str:
    """The rejected value on one short line, whatever the user passed."""
    text = repr(str(value))
    return text if len(text) <= 40 else text[:37] + "..."

