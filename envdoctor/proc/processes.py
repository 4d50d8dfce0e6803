"""psutil where it is installed; without it (the zipapp vendors nothing compiled) the same calls
answered from /proc by envdoctor.proc.procfs. Modules that watch processes import `psutil` from here."""

try:
    import psutil
except ImportError:
    from envdoctor.proc import procfs as psutil

__all__ = ["psutil"]
