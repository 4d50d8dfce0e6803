# expect: run.shadowed-module - confirmed
# A folder named like the library in the working directory (an old checkout's leftovers): its
# __init__.py is imported instead of the installed gymnasium, which lacks nothing the script asks for.
mkdir -p gymnasium
echo '"""Notes on environments."""' > gymnasium/__init__.py
cat > train.py <<'PY'
from gymnasium import spaces
space = spaces.Box(low=-1.0, high=1.0, shape=(3,))
PY
exec "$PYTHON" train.py
