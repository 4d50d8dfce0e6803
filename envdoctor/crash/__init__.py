"""What a dying process leaves behind, read: faulthandler's dumps (tracebacks), every thread's stack
named by what it runs (stacks), the bounds that keep them small (bounds) and what each signal means
(signals).

A floor of its own, below the probe, the fact views and `run`: the probe reads its crashed stages with
it, `run` records a crash with it, and the checks, links and renderers word both from it. Pure text
and data; nothing here starts a process.
"""
