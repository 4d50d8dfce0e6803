"""Installed as `sitecustomize` for the Python processes of `envdoctor run`: what each one really ran
as, and which files it opened for reading.

Stdlib only, valid Python 3.8 (runs in the user's interpreter, which may not have envdoctor). It writes
JSON lines to the file named by ENVDOCTOR_AUDIT_LOG: one "start" line per process (its interpreter,
prefix, argv and environment, so the doctor judges the environment the program really had) and one
"open" line per file opened for reading (from Python's `open` audit event, PEP 578), so a model found
through a config file is inspected too. Then it steps aside: its folder leaves sys.path and the user's
own `sitecustomize`, if there is one, is loaded as it would have been.
"""

import json
import os
import sys

LOG_VARIABLE = "ENVDOCTOR_AUDIT_LOG"
MAX_PATHS = 2000
MAX_PATH_CHARS = 4096
# What envdoctor can judge: SB3 model archives. Imports open thousands of sources, which are not recorded.
JUDGED_SUFFIXES = (".zip",)


def append(fd, record):
    """One whole line per write: O_APPEND keeps lines of several processes from interleaving."""
    try:
        os.write(fd, (json.dumps(record) + "\n").encode("utf-8", "replace"))
    except (OSError, ValueError, TypeError):
        pass


def reading(mode, flags):
    if isinstance(mode, str):
        return "r" in mode and "+" not in mode
    return isinstance(flags, int) and flags & os.O_ACCMODE == os.O_RDONLY


def open_recorder(fd):
    """The audit hook: each file of a judged kind opened for reading, once per process, up to MAX_PATHS."""
    seen = set()
    pid = os.getpid()

    def hook(event, args):
        if event != "open" or len(seen) >= MAX_PATHS or len(args) < 3:
            return
        path, mode, flags = args[0], args[1], args[2]
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str) or len(path) > MAX_PATH_CHARS or not path.lower().endswith(JUDGED_SUFFIXES):
            return
        if not reading(mode, flags):
            return
        path = os.path.join(os.getcwd(), path) if not os.path.isabs(path) else path
        if path not in seen:
            seen.add(path)
            append(fd, {"event": "open", "pid": pid, "path": path})

    return hook


def start_record():
    return {
        "event": "start",
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "argv": list(sys.argv)[:50],
        "environ": dict(os.environ),
    }


def step_aside():
    """Leave sys.path as it would have been and run the user's own sitecustomize, if any."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        import importlib.machinery
        import importlib.util

        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)
    except Exception as error:
        said_as_site_says(error)


def said_as_site_says(error):
    """An error of the user's sitecustomize, told as site.py tells it without envdoctor: nothing for a
    missing module of that name, one line (the traceback under -v) for anything else."""
    if isinstance(error, ImportError) and error.name == "sitecustomize":
        return
    if sys.flags.verbose:
        sys.excepthook(type(error), error, error.__traceback__)
    else:
        sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n%s: %s\n" % (error.__class__.__name__, error))


def install():
    log = os.environ.get(LOG_VARIABLE)
    if log and hasattr(sys, "addaudithook"):
        try:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError:
            fd = None
        if fd is not None:
            append(fd, start_record())
            sys.addaudithook(open_recorder(fd))
    step_aside()


install()
