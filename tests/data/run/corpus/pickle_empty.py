# expect: run.exception pickle-truncated confirmed
# A replay buffer file left empty by a run killed while saving.
import pickle
open("buffer.pkl", "wb").close()
pickle.load(open("buffer.pkl", "rb"))
