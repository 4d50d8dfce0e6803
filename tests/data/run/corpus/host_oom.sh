# expect: run.out-of-memory - confirmed
# A replay buffer allocated whole under the job's address-space limit.
ulimit -v 1000000
exec "$PYTHON" -c "import numpy as np; buffer = np.zeros((1_000_000, 84, 84), dtype=np.uint8)"
