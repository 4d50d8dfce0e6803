# expect: run.exception error confirmed
# A tree walk without a base case: Python's own recursion limit stops it.
def depth(node):
    return 1 + depth(node)
depth({})
