"""psutil where it is installed; without it (the zipapp vendors nothing compiled) the same calls
answered from /proc by envdoctor.procfs. Modules that watch processes import `psutil` from here."""

try:
    import psutil
except ImportError:
    from envdoctor import procfs as psutil

__all__ = ["psutil"]
