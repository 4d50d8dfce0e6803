# expect: run.exception cannot-pickle confirmed
# A threading lock sent to a spawn-started worker process.
import multiprocessing as mp
import threading

def work(lock):
    pass

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    ctx.Process(target=work, args=(threading.Lock(),)).start()
