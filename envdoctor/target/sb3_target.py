"""What the diagnosed interpreter offers an SB3 model, printed as one JSON document.

Argument: a JSON list of module names a model's pickles import. For each, whether this interpreter
can find it, WITHOUT importing it (a parent package's __init__ would run): the top-level name goes
through importlib.util.find_spec, each submodule through PathFinder on the parent's search path.
Also the Python version, the opcodes this interpreter defines, and the versions of the SB3 stack.
Stdlib only, Python 3.8 syntax.
"""

import dis
import importlib.machinery
import importlib.util
import json
import sys

try:
    from importlib import metadata
except ImportError:  # Python < 3.8 has no importlib.metadata
    metadata = None

DISTRIBUTIONS = ("numpy", "torch", "stable-baselines3", "sb3-contrib", "gymnasium", "gym", "cloudpickle")


def top_level_spec(name):
    if name in sys.modules:
        return getattr(sys.modules[name], "__spec__", None) or importlib.machinery.ModuleSpec(name, None)
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def findable(module):
    """True when found, False when not, None when a parent is a plain module (an attribute, unknown)."""
    parts = module.split(".")
    spec = top_level_spec(parts[0])
    for index in range(1, len(parts)):
        if spec is None:
            return False
        fullname = ".".join(parts[: index + 1])
        if fullname in sys.modules:
            spec = getattr(sys.modules[fullname], "__spec__", None) or spec
            continue
        locations = spec.submodule_search_locations
        if locations is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, list(locations))
    return spec is not None


def version_of(name):
    if metadata is None:
        return None
    try:
        return metadata.version(name)
    except Exception:
        return None


def main():
    modules = json.loads(sys.argv[1]) if len(sys.argv) > 1 else []
    print(json.dumps({
        "python": {
            "version": ".".join(str(n) for n in sys.version_info[:3]),
            "version_info": list(sys.version_info[:3]),
            "implementation": sys.implementation.name,
            "executable": sys.executable,
        },
        "opcodes": sorted(n for n in dis.opmap.values() if n < 256),
        "modules": {m: findable(m) for m in modules},
        "versions": {d: version_of(d) for d in DISTRIBUTIONS},
    }))


main()
