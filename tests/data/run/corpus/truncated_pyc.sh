# expect: run.exception marshal-too-short confirmed
# A module's compiled file cut short (an install interrupted while the disk filled); the source is unchanged.
mkdir -p pkg
printf 'def reward(obs):\n    return sum(obs)\n' > pkg/shaping.py
"$PYTHON" -m py_compile pkg/shaping.py
pyc=$(ls pkg/__pycache__/shaping.*.pyc)
head -c 20 "$pyc" > "$pyc.cut" && mv "$pyc.cut" "$pyc"
PYTHONPATH=pkg exec "$PYTHON" -c "import shaping; print(shaping.reward([1, 2]))"
