"""Stable-Baselines3 model files: static forensics (nothing is ever unpickled) and sanitising.

archive.py opens the zip defensively; pickle_vm.py traces pickles symbolically; data_only.py proves a
trace builds nothing but data (the *safe* verdict), pickle_judge.py and code_judge.py find what is known
to reach out (*dangerous*), weights_only.py judges `.pth` members as torch's weights_only loader does, and
classify.py puts each entry's verdict together (everything else *contains code*); cloudpickle_reader.py
and bytecode.py read pickled code for forensics; forensics.py puts one model's facts together;
verdicts.py judges them against a target; schedules.py, pickle_writer.py and sanitize.py write a copy
that holds only pickles envdoctor wrote (docs/model-safety.md).
"""
