"""`envdoctor run`: supervise the user's own command so that its next crash explains itself.

The command runs with its streams passed through and Python's faulthandler on; meanwhile its process
tree's memory (and GPU memory, where NVML answers) is sampled. When it dies abnormally, the pieces here
turn what was seen into a report: how it ended (signals), every thread's stack (stacks, gdb), the
memory timeline (sampling, gpu, limits, chart, png) and the verdicts drawn from them (verdict).
Only `supervise` starts processes; everything that judges is a pure function of recorded data.
"""
