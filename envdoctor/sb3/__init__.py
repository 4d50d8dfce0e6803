"""Stable-Baselines3 model files: static forensics (nothing is ever unpickled) and sanitising.

archive.py opens the zip defensively; pickle_vm.py traces pickles symbolically; data_only.py proves a
trace builds nothing but data (the *safe* verdict), pickle_judge.py and code_judge.py find what is known
to reach out (*dangerous*), weights_only.py judges `.pth` members as torch's weights_only loader does, and
classify.py puts each entry's verdict together (everything else *contains code*); cloudpickle_reader.py
reads pickled code for forensics; forensics.py puts one model's facts together; pickle_writer.py and
sanitize.py write a copy that holds only pickles envdoctor wrote (docs/model-safety.md). What is known
about model files, which the checks read too, lives below in knowledge/: the opcode tables
(bytecode.py), the schedule entries (sb3_schedules.py), the verdicts against a target (sb3_verdicts.py)
and the remedies a finding words (sb3_advice.py).
"""
