# expect: run.exception pickle-not-pickle confirmed
# A Git LFS pointer checked out instead of the pickle it stands for.
import pickle
open("stats.pkl", "w").write("version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 52311\n")
pickle.load(open("stats.pkl", "rb"))
