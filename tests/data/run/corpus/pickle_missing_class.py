# expect: run.exception pickle-missing-class confirmed
# An object pickled by a training script (its class in that script's __main__), loaded by another script.
import pickle
pickle.loads(b"c__main__\nRunningMeanStd\n)\x81.")
