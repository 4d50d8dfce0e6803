# expect: run.shadowed-module - confirmed
# A helper module named numpy.py beside the training script: `import numpy` runs it, not NumPy.
cat > numpy.py <<'PY'
def moving_average(values, n):
    return [sum(values[i:i + n]) / n for i in range(len(values) - n + 1)]
PY
cat > train.py <<'PY'
import numpy as np
observations = np.zeros((4, 8))
PY
exec "$PYTHON" train.py
