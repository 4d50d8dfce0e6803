"""envdoctor: explains why a Python ML/RL stack crashes on this machine, and how to fix it."""

__version__ = "0.1.0"
