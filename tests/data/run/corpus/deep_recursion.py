# expect: run.deep-recursion - likely
# A recursive tree walk (through map, so each level also takes C stack) with its recursion limit
# raised past what the stack holds.
import sys

sys.setrecursionlimit(10**7)

def walk(depth):
    return list(map(walk, [depth + 1]))

walk(0)
