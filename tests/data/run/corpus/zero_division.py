# expect: run.exception error confirmed
# An average over an empty list of episode returns.
returns = []
mean = sum(returns) / len(returns)
