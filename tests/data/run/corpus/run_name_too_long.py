# expect: run.exception name-too-long confirmed
# A log file named after every hyperparameter of the run.
params = {f"param_{i}": 0.0003 * i for i in range(40)}
name = "_".join(f"{k}={v}" for k, v in params.items()) + ".log"
open(name, "w").write("start\n")
