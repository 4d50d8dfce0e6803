# expect: sb3.foreign-bytecode - confirmed
# A learning-rate schedule cloudpickled to a plain .pkl by Python 3.13 on another machine, loaded and called here: its bytecode crashes this Python.
mkdir -p writer/lib
cp -r "$("$PYTHON" -c 'import cloudpickle, os; print(os.path.dirname(cloudpickle.__file__))')" writer/lib/
cat > writer/save_schedule.py <<'PY'
import sys
import cloudpickle

def linear(initial):
    def schedule(progress):
        return progress * initial
    return schedule

with open(sys.argv[1], "wb") as f:
    cloudpickle.dump(linear(3e-4), f)
PY
PYTHONPATH=writer/lib "$(pyenv root)"/versions/3.13.*/bin/python3.13 writer/save_schedule.py schedule.pkl
rm -r writer
cat > resume.py <<'PY'
import cloudpickle
with open("schedule.pkl", "rb") as f:
    schedule = cloudpickle.load(f)
print("learning rate", schedule(0.5))
PY
exec "$PYTHON" resume.py
