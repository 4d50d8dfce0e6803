"""The crash-isolated probe: run the real stack, stage by stage, in a child, and pin down what crashes.

`probing.run_probe` runs the ladder and bisects its crash; what it records (`result`) and the
environment changes bisection tries (`variations`) are plain data that the fact views and the pure
checks read without loading the runner, so this package's own import loads nothing.
"""
