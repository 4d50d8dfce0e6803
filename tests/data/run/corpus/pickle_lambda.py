# expect: run.exception cannot-pickle confirmed
# A lambda handed to a spawn-started worker process.
import multiprocessing as mp

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    worker = ctx.Process(target=lambda: None)
    worker.start()
