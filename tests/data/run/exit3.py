"""Writes to both streams and exits with status 3, as a training script's argument check would."""
import sys

print("training for 0 steps")
print("error: --steps must be positive", file=sys.stderr)
sys.exit(3)
