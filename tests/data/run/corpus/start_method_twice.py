# expect: run.exception context-set confirmed
# The start method set by the program after a library it imported had set it already.
import multiprocessing as mp

if __name__ == "__main__":
    mp.set_start_method("spawn")
    mp.set_start_method("forkserver")
