"""A schedule in an importable module: cloudpickle pickles `decaying_lr` BY REFERENCE (module + name).

make_models.py puts this folder on sys.path while saving; a process without it cannot import the
module, which is the `sb3.missing-module` case.
"""


def decaying_lr(progress_remaining: float) -> float:
    return 3e-4 * progress_remaining
