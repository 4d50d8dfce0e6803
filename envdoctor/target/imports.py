"""Import checks run under the diagnosed interpreter: which top-level modules the installed
distributions provide, where each would really be imported from, and what importing them does.

    plan                       one JSON document: every distribution on sys.path (the first of a name
                               wins, as for the importer), its top-level modules, and each module found
                               outside the distribution's own files (shadowed), with the sys.path
                               entry that put it first. find_spec runs no module code.
    import SECONDS MODULE...   import each module in turn in this process. Before each a `begin` event
                               line, after it an `end` line with its status and error, so a crash is
                               pinned to the module that began and never ended. A faulthandler
                               watchdog dumps the stacks and exits when one import runs past SECONDS.
                               An import after which this process's parent is ending (killed by
                               the module, through `os.getppid()`) ends `killed-parent`, the last.

Events are lines starting with MARK; everything else the modules print lies between their `begin`
and `end`. Stdlib only, Python 3.8 syntax, never imports envdoctor.
"""

import faulthandler
import importlib
import importlib.util
import json
import os
import re
import signal
import site
import sys
import sysconfig
import time
import traceback

try:
    from importlib import metadata
except ImportError:  # Python < 3.8 is refused by the doctor before this runs
    metadata = None

MARK = "@envdoctor-imports "
NOT_MODULES = frozenset(("test", "tests", "testing", "doc", "docs", "example", "examples", "benchmark", "benchmarks", "scripts", "tools"))
METADATA_SUFFIXES = (".dist-info", ".egg-info", ".data")
EXTENSION_SUFFIXES = (".so", ".pyd")
ERROR_FRAMES = 6
REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
EXTRA_MARKER = re.compile(r";.*\bextra\b")
EVENTS = 1  # the original stdout's descriptor, kept in import_all: a module may replace sys.stdout
PARENT = 0  # the process that started this one, as it was before the first import
PF_EXITING = 0x4  # /proc/PID/stat's flags: the process has begun to exit
# Signals whose default action does not end a process: pending, they do not mean its end.
HARMLESS = frozenset(getattr(signal, name) for name in ("SIGCHLD", "SIGCONT", "SIGURG", "SIGWINCH", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU") if hasattr(signal, name))


def emit(event, **fields):
    """One event line; it starts on a line of its own even after a module's unfinished output."""
    fields["event"] = event
    sys.stdout.flush()
    os.write(EVENTS, ("\n" + MARK + json.dumps(fields, default=str) + "\n").encode("utf-8", "replace"))


def normalize(name):
    return "-".join(part for part in name.replace("_", "-").replace(".", "-").lower().split("-") if part)


def importable(name):
    """A public top-level module name: an identifier, not private, not a stray test or docs folder."""
    return name.isidentifier() and not name.startswith("_") and name.lower() not in NOT_MODULES


def record_module(parts):
    """The top-level module a RECORD path belongs to, or None for metadata, scripts and data."""
    if not parts or parts[0] in ("..", "__pycache__") or parts[0].endswith(METADATA_SUFFIXES):
        return None
    if len(parts) > 1:
        return parts[0]
    name = parts[0]
    if name.endswith(".py"):
        return name[:-3]
    if name.endswith(EXTENSION_SUFFIXES):
        return name.split(".", 1)[0]
    return None


def top_level_modules(dist):
    """From top_level.txt where the distribution has one, else from the files its RECORD lists. A name
    top_level.txt lists with no module or package file in RECORD (botorch lists dist, tutorials and
    website) is not a module of it, so it is not imported; an editable install's files are not in its
    RECORD, so its top_level.txt is taken as it is."""
    recorded = [record_module(path.parts) for path in dist.files or ()]
    text = dist.read_text("top_level.txt")
    if text is not None:
        names = [line.strip().replace("\\", "/").split("/")[0] for line in text.splitlines()]
        if any(recorded) and editable_root(dist) is None:
            names = [name for name in names if name in recorded]
    else:
        names = recorded
    found = []
    for name in names:
        if name and importable(name) and name not in found:
            found.append(name)
    return found


def required_names(dist):
    """Names of the distributions this one always requires (an extra's requirements are optional)."""
    names = []
    for requirement in dist.requires or ():
        match = REQUIREMENT_NAME.match(requirement)
        if match and not EXTRA_MARKER.search(requirement):
            names.append(normalize(match.group(1)))
    return names


def editable_root(dist):
    """The project folder of an editable install (direct_url.json), whose files it imports from."""
    try:
        info = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return None
    url = info.get("url", "") if isinstance(info, dict) else ""
    if isinstance(info, dict) and (info.get("dir_info") or {}).get("editable") and url.startswith("file://"):
        return url[len("file://"):]
    return None


def pth_roots(dist, location):
    """Folders a distribution's own .pth files add to sys.path (older editable installs)."""
    roots = []
    for path in dist.files or ():
        if len(path.parts) != 1 or not path.name.endswith(".pth"):
            continue
        try:
            with open(os.path.join(location, path.name), encoding="utf-8", errors="replace") as stream:
                lines = stream.read(65536).splitlines()
        except OSError:
            continue
        roots.extend(line.strip() for line in lines if line.strip() and not line.startswith(("#", "import ", "import\t")))
    return roots


def own_roots(dist, location):
    """Where the distribution's modules may legitimately be imported from."""
    roots = [location] + pth_roots(dist, location)
    editable = editable_root(dist)
    if editable:
        roots.append(editable)
    return [os.path.realpath(root) for root in roots]


def inside(path, roots):
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def spec_path(spec):
    """The file or package folder an import of this spec runs; None for namespace, built-in and frozen modules."""
    if spec is None or not spec.has_location or not spec.origin:
        return None
    origin = os.path.abspath(spec.origin)
    if os.path.basename(origin).startswith("__init__."):
        return os.path.dirname(origin)
    return origin


def path_source(entry):
    """Why a sys.path entry is there, in the words a user recognises."""
    if entry in ("", ".") or os.path.realpath(entry) == os.path.realpath(os.getcwd()):
        return "working directory"
    pythonpath = [os.path.realpath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if os.path.realpath(entry) in pythonpath:
        return "PYTHONPATH"
    if site.ENABLE_USER_SITE and os.path.realpath(entry) == os.path.realpath(site.getusersitepackages()):
        return "user site"
    return "sys.path"


def sys_path_entry(path):
    """The sys.path entry a module file or package folder was found under ('' is the working directory)."""
    folder = os.path.realpath(os.path.dirname(path))
    for entry in sys.path:
        if os.path.realpath(entry or os.getcwd()) == folder:
            return entry
    return None


def standard_library(path):
    roots = [os.path.realpath(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib")]
    return inside(path, roots) and "site-packages" not in path


def shadow(module, dist_record, roots):
    """The record of `module` found outside its distribution's files, or None when it is its own."""
    try:
        path = spec_path(importlib.util.find_spec(module))
    except Exception:  # a broken finder on sys.path: the import itself will say more
        return None
    if path is None or inside(path, roots) or standard_library(path):
        return None
    entry = sys_path_entry(path)
    return {
        "module": module,
        "distribution": dist_record["name"],
        "version": dist_record["version"],
        "path": path,
        "distribution_path": os.path.join(dist_record["location"], module),
        "sys_path_entry": os.getcwd() if entry == "" else entry,
        "source": path_source(entry) if entry is not None else "sys.path",
    }


def distributions():
    """Every distribution on sys.path, the first of each name: the one the importer sees. A metadata
    folder pip renamed with a leading `~` (the leftover of an interrupted install) is not one, as for
    pip; importlib.metadata lists it, and names the folder only in a private attribute."""
    seen, found = set(), []
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").strip()
        key = normalize(name)
        if not name or key in seen or os.path.basename(str(getattr(dist, "_path", ""))).startswith("~"):
            continue
        seen.add(key)
        found.append(dist)
    return found


def plan():
    records, shadowed = [], []
    for dist in distributions():
        location = os.path.abspath(str(dist.locate_file("")))
        record = {
            "name": dist.metadata["Name"].strip(),
            "version": (dist.version or "").strip(),
            "location": location,
            "modules": top_level_modules(dist),
            "requires": required_names(dist),
        }
        roots = own_roots(dist, location)
        for module in record["modules"]:
            found = shadow(module, record, roots)
            if found:
                shadowed.append(found)
        records.append(record)
    return {"python": sys.version.split()[0], "distributions": records, "shadowed": shadowed}


def describe_error(error):
    """The exception and its innermost frames outside the import machinery."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith("<frozen")][-ERROR_FRAMES:][::-1]
    kind = type(error)
    return {
        "type": kind.__name__ if kind.__module__ == "builtins" else "%s.%s" % (kind.__module__, kind.__qualname__),
        "message": str(error)[:4000],
        "frames": [{"file": f.filename, "line": f.lineno, "function": f.name} for f in frames],
    }


def status_fields(pid):
    """/proc/PID/status as a mapping, and /proc/PID/stat's fields after the command name; None when
    the process is gone or there is no /proc."""
    try:
        with open("/proc/%d/status" % pid) as status, open("/proc/%d/stat" % pid) as stat:
            fields = dict(line.partition(":")[::2] for line in status.read().splitlines())
            return fields, stat.read().rpartition(")")[2].split()
    except OSError:
        return None


def ending_signal(pid):
    """The name of a pending signal that will end process `pid` (not ignored, not blocked, fatal by
    default: the parent runs no handlers), "exiting" when it has begun to exit, or None."""
    found = status_fields(pid)
    if found is None:
        return "gone" if os.path.isdir("/proc/self") else None
    status, stat = found
    if status.get("State", "").strip()[:1] in ("Z", "X") or int(stat[6]) & PF_EXITING:
        return "exiting"
    pending = int(status.get("SigPnd", "0"), 16) | int(status.get("ShdPnd", "0"), 16)
    pending &= ~(int(status.get("SigIgn", "0"), 16) | int(status.get("SigBlk", "0"), 16))
    for number in range(1, 65):
        if pending >> (number - 1) & 1 and number not in HARMLESS:
            try:
                return signal.Signals(number).name
            except ValueError:
                return "signal %d" % number
    return None


def parent_ending():
    """How the process that started this one is ending, if it is: an import that killed it (by
    `os.getppid()`) has returned by now, and its signal is pending or already acted on."""
    if os.getppid() != PARENT:
        return "gone"
    return ending_signal(PARENT)


def import_one(module, limit):
    emit("begin", module=module)
    faulthandler.dump_traceback_later(limit, exit=True)
    started = time.monotonic()
    fields = {"status": "ok"}
    try:
        imported = importlib.import_module(module)
        fields["file"] = getattr(imported, "__file__", None)
    except BaseException as error:  # whatever an import raises (SystemExit too) is its result
        fields = {"status": "failed", "error": describe_error(error)}
    faulthandler.cancel_dump_traceback_later()
    sys.stderr.flush()
    ending = parent_ending()
    if ending is not None:
        fields = {"status": "killed-parent", "signal": ending}
    emit("end", module=module, duration_s=round(time.monotonic() - started, 4), **fields)
    if ending is not None:
        os._exit(0)  # this process's own end follows its parent's (the parent-death signal)


def import_all(limit, modules):
    global EVENTS, PARENT
    EVENTS, PARENT = os.dup(1), os.getppid()
    faulthandler.enable(all_threads=True)
    for module in modules:
        import_one(module, limit)
    emit("done")
    os._exit(0)  # the imported modules' threads and exit handlers are not part of the result


def main(argv):
    if argv[:1] == ["import"]:
        import_all(float(argv[1]), argv[2:])
    else:
        sys.stdout.write(json.dumps(plan()))


if __name__ == "__main__":
    main(sys.argv[1:])
