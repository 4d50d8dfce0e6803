"""Which file the dynamic linker loaded for a library, and why: the library behind an undefined
symbol or a missing symbol version, not only the class of the error.

"version `GLIBCXX_3.4.30' not found (required by ext.so)" says what is missing, not which
libstdc++.so.6 was loaded instead nor what put it first. This module resolves a library name the way
glibc's loader does for the object that needs it (ld.so(8), "Rules"): a name with a slash is a path;
else LD_PRELOAD's entries of that name, then the needing object's DT_RPATH (only when it has no
DT_RUNPATH), LD_LIBRARY_PATH, its DT_RUNPATH ($ORIGIN expanded), the ldconfig cache, and the default
folders. It reads only ELF headers (collect/elf.py), never loads anything, and then names every file
of that name it can find that defines the missing version: the one that should have been loaded.
"""

from __future__ import annotations

import os
import re
from typing import Iterable, List, Mapping, Optional, Tuple

from envdoctor import host
from envdoctor.collect.elf import SYSTEM_LIBRARY_DIRS, ElfVersions, read_versions
from envdoctor.collect.libraries import LDCONFIG_CACHE, cache_paths

MISSING_VERSION = re.compile(r"version [`']([\w.@-]+)' not found \(required by ([^)]+)\)")
WRONG_VERSION = re.compile(r"symbol (\S+) version (\S+) not defined in file (\S+) with link time reference")
UNDEFINED = re.compile(r"([^\s:]+\.so[\w.]*): undefined symbol: (\S+?)(?:, version (\S+))?$", re.MULTILINE)
MAX_CANDIDATES = 20

Place = Tuple[str, str]  # (how the loader came to look there, folder)


def expanded(folder: str, origin: str) -> str:
    return folder.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)


def search_places(needer: Optional[ElfVersions], needer_path: str, environ: Mapping[str, str]) -> List[Place]:
    """Where the loader looks for a library `needer_path` needs, in its order."""
    origin = os.path.dirname(os.path.realpath(needer_path)) if needer_path else ""
    places: List[Place] = []
    if needer is not None and needer.rpath and not needer.runpath:
        places += [(f"the DT_RPATH of {os.path.basename(needer_path)}", expanded(f, origin)) for f in needer.rpath]
    places += [(f"LD_LIBRARY_PATH={environ['LD_LIBRARY_PATH']}", f) for f in environ.get("LD_LIBRARY_PATH", "").split(":") if f]
    if needer is not None:
        places += [(f"the DT_RUNPATH of {os.path.basename(needer_path)}", expanded(f, origin)) for f in needer.runpath]
    return places


def cached(name: str) -> List[str]:
    try:
        return [p for p in cache_paths(host.path(LDCONFIG_CACHE).read_bytes()) if os.path.basename(p) == name]
    except OSError:
        return []


def resolve(name: str, needer_path: str, environ: Mapping[str, str]) -> Optional[Tuple[str, str]]:
    """(path, how) of the file the loader loads for library `name` needed by `needer_path`; None when
    none is found."""
    if "/" in name:
        return (name, "the path the object names") if os.path.isfile(name) else None
    for entry in re.split(r"[:\s]+", environ.get("LD_PRELOAD", "")):
        if entry and os.path.basename(entry) == name and os.path.isfile(entry):
            return entry, f"LD_PRELOAD={environ['LD_PRELOAD']}"
    needer = read_versions(needer_path) if needer_path and os.path.isfile(needer_path) else None
    for how, folder in search_places(needer, needer_path, environ):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path, how
    for path in cached(name):
        if host.path(path).is_file():
            return path, f"the ldconfig cache ({LDCONFIG_CACHE})"
    for folder in SYSTEM_LIBRARY_DIRS:
        if host.path(os.path.join(folder, name)).is_file():
            return os.path.join(folder, name), "the default folders"
    return None


def candidates(name: str, needer_path: str, environ: Mapping[str, str], prefix: str) -> List[str]:
    """Every file called `name` the loader could have been pointed at: the search places, conda's and
    the environment's lib/, the cache and the default folders."""
    needer = read_versions(needer_path) if needer_path and os.path.isfile(needer_path) else None
    folders = [f for _, f in search_places(needer, needer_path, environ)] + ([os.path.join(prefix, "lib")] if prefix else [])
    conda = environ.get("CONDA_PREFIX")
    folders += [os.path.join(conda, "lib")] if conda else []
    paths = [os.path.join(f, name) for f in folders] + cached(name) + [os.path.join(f, name) for f in SYSTEM_LIBRARY_DIRS]
    real = {}
    for path in paths:
        if os.path.isfile(path):
            real.setdefault(os.path.realpath(path), path)
    return list(real.values())[:MAX_CANDIDATES]


def defining(paths: Iterable[str], version: str) -> List[str]:
    """Those of `paths` whose ELF version definitions include `version`."""
    found = []
    for path in paths:
        versions = read_versions(path)
        if versions is not None and version in versions.defines:
            found.append(path)
    return found


def needed_from(needer_path: str, version: str) -> Optional[str]:
    """The library `needer_path` wants `version` from, by its version needs."""
    needs = read_versions(needer_path) if os.path.isfile(needer_path) else None
    return next((library for library, versions in (needs.needs.items() if needs else ()) if version in versions), None)


def explained(library: str, version: Optional[str], needer_path: str, environ: Mapping[str, str], prefix: str, loaded: Optional[Tuple[str, str]] = None) -> dict:
    """The resolution of `library` for `needer_path`: what was loaded and why, and which files define `version`."""
    loaded = loaded or resolve(library, needer_path, environ)
    others = candidates(library, needer_path, environ, prefix)
    return {
        "library": library,
        "version": version,
        "needed_by": needer_path or None,
        "loaded": loaded[0] if loaded else None,
        "via": loaded[1] if loaded else None,
        "loaded_defines_version": (version in (read_versions(loaded[0]) or ElfVersions()).defines) if loaded and version else None,
        "defined_by": [p for p in defining(others, version) if not loaded or os.path.realpath(p) != os.path.realpath(loaded[0])] if version else [],
    }


def loader_failure(text: str, environ: Mapping[str, str], prefix: str) -> Optional[dict]:
    """What the loader's message in `text` says, resolved on this machine: the library it loaded,
    the variable or path that decided it, and the files that define what it lacked; None without one."""
    missing = MISSING_VERSION.search(text)
    if missing:
        version, needer = missing.group(1), missing.group(2).strip()
        library = needed_from(needer, version)
        if library:
            return explained(library, version, needer, environ, prefix)
    wrong = WRONG_VERSION.search(text)
    if wrong:
        version, loaded = wrong.group(2), wrong.group(3)
        library = os.path.basename(loaded)
        how = resolve(library, "", environ)
        return explained(library, version, "", environ, prefix, (loaded, how[1] if how and os.path.realpath(how[0]) == os.path.realpath(loaded) else "an object already loaded in the process"))
    undefined = UNDEFINED.search(text)
    if undefined:
        needer, version = undefined.group(1), undefined.group(3)
        library = needed_from(needer, version) if version else None
        if library:
            return explained(library, version, needer, environ, prefix)
        needs = read_versions(needer) if os.path.isfile(needer) else None
        return {
            "library": None,
            "version": version,
            "needed_by": needer,
            "symbol": undefined.group(2),
            "needed": [{"library": name, **dict(zip(("loaded", "via"), resolve(name, needer, environ) or (None, None)))} for name in (needs.needed if needs else [])][:MAX_CANDIDATES],
        }
    return None
