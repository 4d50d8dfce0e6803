"""Ends itself on purpose after its own message, in no form an error table knows: its words are the evidence."""
import sys

print("evaluation failed: mean reward 12.5 below the threshold 200", file=sys.stderr)
sys.exit(3)
