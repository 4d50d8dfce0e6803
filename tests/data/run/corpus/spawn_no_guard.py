# expect: run.exception spawn-bootstrap confirmed
# A worker started at the script's top level under the spawn method, without the __main__ guard.
import multiprocessing as mp
import sys

def work():
    pass

mp.set_start_method("spawn", force=True)
worker = mp.Process(target=work)
worker.start()
worker.join()
sys.exit(worker.exitcode)
