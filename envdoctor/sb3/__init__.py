"""Stable-Baselines3 model files: static forensics (nothing is ever unpickled) and sanitising.

archive.py opens the zip defensively; pickle_vm.py traces pickles symbolically; cloudpickle_reader.py
and classify.py turn traces into verdicts; bytecode.py names the producing Python; forensics.py puts
one model's facts together; verdicts.py judges them against a target; schedules.py and sanitize.py
write a copy whose schedules are plain numbers.
"""
