"""Installed as `sitecustomize` for the Python processes of `envdoctor run`: what each one really ran
as, and which files it opened for reading.

Stdlib only, valid Python 3.8 (runs in the user's interpreter, which may not have envdoctor). It writes
JSON lines to the file named by ENVDOCTOR_AUDIT_LOG: one "start" line per process (its interpreter,
prefix, argv and environment, so the doctor judges the environment the program really had) and one
"open" line per file opened for reading (from Python's `open` audit event, PEP 578), so a model found
through a config file is inspected too; an "exception" line when the process dies of an uncaught
exception and an "end" line when it exits through the interpreter (a start with neither died by a
signal), so the process that failed is told apart from the others a wrapper script ran. The
"exception" line also says when the module the exception is about was loaded from a file that hides
another of the same name further down sys.path (a `numpy.py` beside the script, a torch source folder
in the working directory): what the failing process really imported, which no later look can see. Under
bisection it makes the variation again (ENVDOCTOR_VARIATION) before anything else runs, since a wrapper
script may have exported the same variable after the doctor set it. Then it steps aside: its folder
leaves sys.path and the user's own `sitecustomize`, if there is one, is loaded as it would have been.
"""

import atexit
import json
import os
import re
import sys

LOG_VARIABLE = "ENVDOCTOR_AUDIT_LOG"
MAX_PATHS = 2000
MAX_PATH_CHARS = 4096
# Model files: SB3 archives and the pickles and torch files programs load. Imports open thousands of
# sources, which are not recorded.
JUDGED_SUFFIXES = (".zip", ".pkl", ".pickle", ".pt", ".pth")
VARIATION_VARIABLE = "ENVDOCTOR_VARIATION"
# Read by the dynamic loader when the process started: changing them inside it changes nothing.
LOADER_VARIABLES = ("LD_LIBRARY_PATH", "LD_PRELOAD")


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


# "module 'numpy' has no attribute 'zeros'", "partially initialized module 'torch' has no attribute ...":
# before Python 3.10 an AttributeError does not carry the object it was raised for.
MODULE_ATTRIBUTE = re.compile(r"module '([\w.]+)' has no attribute")


def module_in_question(value):
    """The module an uncaught exception is about: the one an AttributeError looked a name up in, or
    the one an ImportError could not import (a name from)."""
    if isinstance(value, AttributeError):
        held = getattr(value, "obj", None)
        if type(held) is type(sys):
            return getattr(held, "__name__", None)
        found = MODULE_ATTRIBUTE.search(str(value))
        return found.group(1) if found else None
    if isinstance(value, ImportError):
        return value.name
    return None


def package_folder(origin):
    """The sys.path entry a module file was found in: beside it, or above its package's __init__."""
    folder = os.path.dirname(origin)
    return os.path.dirname(folder) if os.path.basename(origin).startswith("__init__.") else folder


def shadowing(value):
    """{"module", "file", "hides"} when the module `value` is about was loaded from a file that hides
    another module of the same name further down sys.path; None otherwise, or when it cannot be told."""
    try:
        import importlib.machinery

        name = module_in_question(value)
        top = name.partition(".")[0] if isinstance(name, str) else ""
        if not top:
            return None
        entries = [os.path.abspath(entry or os.curdir) for entry in sys.path if isinstance(entry, str)]
        origin = getattr(getattr(sys.modules.get(top), "__spec__", None), "origin", None)
        if origin is None:  # a module whose import failed is no longer in sys.modules: what import finds
            found = importlib.machinery.PathFinder.find_spec(top, entries)
            origin = found.origin if found is not None else None
        folder = package_folder(origin) if isinstance(origin, str) and os.path.isabs(origin) else None
        if folder not in entries:
            return None
        hidden = importlib.machinery.PathFinder.find_spec(top, entries[entries.index(folder) + 1:])
        hides = hidden.origin if hidden is not None and isinstance(hidden.origin, str) else None
        if not hides or hides == origin:
            return None
        return {"module": top, "file": origin, "hides": hides}
    except Exception:
        return None


def record_ending(fd):
    """An "exception" line when the process dies of an uncaught exception, an "end" line when the
    interpreter exits (after the exception's); a process that wrote neither was killed."""
    pid = os.getpid()
    previous = sys.excepthook

    def excepthook(kind, value, traceback):
        append(fd, {"event": "exception", "pid": pid, "type": getattr(kind, "__name__", str(kind)), "shadowing": shadowing(value)})
        previous(kind, value, traceback)

    sys.excepthook = excepthook
    atexit.register(append, fd, {"event": "end", "pid": pid})


def without_pythonpath(folders):
    """sys.path without `folders` (the ones PYTHONPATH or the user site put there)."""
    dropped = set(os.path.abspath(f) for f in folders if f)
    sys.path[:] = [p for p in sys.path if not p or os.path.abspath(p) not in dropped]


def varied(name, value):
    """Make one variable of the variation (value None: unset it) in this process: "as-given" when it
    already was, "re-applied" when something between the doctor and here had changed it, "too-late"
    when only the process's start could have changed it."""
    now = os.environ.get(name)
    if name == "PYTHONPATH" and value is None:
        here = os.path.dirname(os.path.abspath(__file__))
        theirs = [f for f in (now or "").split(os.pathsep) if f and os.path.abspath(f) != here]
        if not theirs:
            return "as-given"
        without_pythonpath(theirs)
        os.environ[name] = here  # the processes it starts still get the hook
        return "re-applied"
    if now == value:
        return "as-given"
    if name in LOADER_VARIABLES:
        return "too-late"
    if name == "PYTHONNOUSERSITE" and value:
        import site

        without_pythonpath([site.getusersitepackages()])
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    return "re-applied"


def apply_variation(fd):
    """Bisection's one change, made again at interpreter start and recorded variable by variable."""
    raw = os.environ.get(VARIATION_VARIABLE)
    if not raw:
        return
    try:
        variation = json.loads(raw)
        changes = dict(variation.get("set") or {})
        changes.update((name, None) for name in variation.get("unset") or ())
    except (ValueError, TypeError, AttributeError):
        return
    outcomes = {}
    for name, value in changes.items():
        if isinstance(name, str) and (value is None or isinstance(value, str)):
            outcomes[name] = varied(name, value)
    append(fd, {"event": "variation", "pid": os.getpid(), "variables": outcomes})


def install():
    log = os.environ.get(LOG_VARIABLE)
    if log and hasattr(sys, "addaudithook"):
        try:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError:
            fd = None
        if fd is not None:
            apply_variation(fd)
            append(fd, start_record())
            sys.addaudithook(open_recorder(fd))
            record_ending(fd)
    step_aside()


install()
