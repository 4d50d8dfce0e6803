"""psutil where it is installed; without it (the zipapp vendors nothing compiled) the same calls
answered from /proc by envdoctor.proc.procfs. Modules that watch processes import `psutil` from here;
the child runner reads `processes.psutil` only when it looks for processes, so a command whose
children leave nothing behind never pays psutil's import."""


def __getattr__(name: str):
    """`psutil`, found on first use (PEP 562) and kept as this module's attribute."""
    if name != "psutil":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        import psutil as found
    except ImportError:
        from envdoctor.proc import procfs as found
    globals()["psutil"] = found
    return found
