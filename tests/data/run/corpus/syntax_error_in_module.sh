# expect: run.exception error confirmed
# A module of the program's own, on PYTHONPATH, left half-edited: its import fails to compile.
mkdir -p lib
printf 'def reward(obs):\n    return obs[0] +\n' > lib/shaping.py
PYTHONPATH=lib exec "$PYTHON" -c "import shaping"
