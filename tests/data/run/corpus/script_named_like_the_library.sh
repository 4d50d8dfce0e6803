# expect: run.shadowed-module - confirmed
# The training script is called gymnasium.py: `import gymnasium` imports the script itself again.
cat > gymnasium.py <<'PY'
import gymnasium as gym
env = gym.make("CartPole-v1")
PY
exec "$PYTHON" gymnasium.py
