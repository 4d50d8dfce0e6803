"""Reads its stdin and echoes it, to prove stdin passes through untouched."""
import sys

data = sys.stdin.read()
print(f"got {len(data)} bytes: {data.strip()}")
