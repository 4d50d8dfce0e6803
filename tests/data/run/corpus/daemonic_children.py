# expect: run.exception daemonic-children confirmed
# Each pool worker starts its own rollout process: pool workers are daemons and may not have children.
import multiprocessing as mp


def rollout(_):
    return 1


def evaluate(seed):
    worker = mp.Process(target=rollout, args=(seed,))
    worker.start()
    worker.join()
    return seed


if __name__ == "__main__":
    with mp.Pool(2) as pool:
        print(pool.map(evaluate, range(2)))
