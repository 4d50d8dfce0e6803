"""Facts about the interpreter this script runs under, printed as one JSON document.

Stdlib only, Python 3.8 syntax, nothing of the diagnosed stack imported: distributions are read
from their metadata files, torch's build from torch/version.py as text.
"""

import json
import os
import platform
import re
import shutil
import site
import sys
import sysconfig

METADATA_FILES = ("METADATA", "PKG-INFO")


SEPARATORS = re.compile(r"[-_.]+")


def normalize(name):
    return SEPARATORS.sub("-", name).lower()


def read_headers(path):
    """Name, Version and Requires-Dist from a METADATA file, reading only its header block."""
    headers = {"requires": []}
    with open(path, encoding="utf-8", errors="replace") as stream:
        for line in stream:
            if not line.strip():
                break
            key, sep, value = line.partition(":")
            if not sep:
                continue
            key, value = key.strip().lower(), value.strip()
            if key in ("name", "version") and key not in headers:
                headers[key] = value
            elif key == "requires-dist":
                headers["requires"].append(value)
    return headers


def metadata_file(entry_path):
    for name in METADATA_FILES:
        candidate = os.path.join(entry_path, name)
        if os.path.isfile(candidate):
            return candidate
    return entry_path if os.path.isfile(entry_path) else None


def scan_distributions(paths):
    """Every distribution on sys.path; the first of a name wins, as for the importer."""
    found, shadowed, seen = [], [], set()
    for location in paths:
        try:
            entries = sorted(os.listdir(location))
        except OSError:
            continue
        for entry in entries:
            if not entry.endswith((".dist-info", ".egg-info")):
                continue
            path = metadata_file(os.path.join(location, entry))
            if path is None:
                continue
            try:
                headers = read_headers(path)
            except OSError:
                continue
            if "name" not in headers:
                continue
            record = {
                "name": headers["name"],
                "version": headers.get("version", ""),
                "location": location,
                "requires": headers["requires"],
            }
            key = normalize(headers["name"])
            (shadowed if key in seen else found).append(record)
            seen.add(key)
    return found, shadowed


def read_torch_build(distributions):
    """torch/version.py's __version__, cuda, hip and git_version, read as text without importing torch."""
    for dist in distributions:
        if normalize(dist["name"]) != "torch":
            continue
        path = os.path.join(dist["location"], "torch", "version.py")
        try:
            with open(path, encoding="utf-8") as stream:
                text = stream.read()
        except OSError:
            return None
        fields = {}
        for key in ("__version__", "cuda", "hip", "git_version", "xpu"):
            match = re.search(r"^%s\s*(?::\s*[^=]+)?=\s*['\"]([^'\"]*)['\"]" % key, text, re.M)
            fields[key.strip("_")] = match.group(1) if match else None
        return fields
    return None


def find_uv():
    beside = os.path.join(os.path.dirname(sys.executable), "uv")
    return beside if os.path.isfile(beside) else shutil.which("uv")


def conda_prefix():
    if os.path.isdir(os.path.join(sys.prefix, "conda-meta")):
        return sys.prefix
    return None


def interpreter_facts():
    return {
        "version": platform.python_version(),
        "version_info": list(sys.version_info[:3]),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "is_venv": getattr(sys, "base_prefix", sys.prefix) != sys.prefix,
        "conda_prefix": conda_prefix(),
        "platform": sys.platform,
        "machine": platform.machine(),
        "pointer_bits": 64 if sys.maxsize > 2 ** 32 else 32,
        "gil_disabled": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "user_site": site.getusersitepackages() if site.ENABLE_USER_SITE else None,
        "sys_path": [p for p in sys.path if p],
    }


def main():
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    distributions, shadowed = scan_distributions(paths)
    versions = {normalize(d["name"]): d["version"] for d in distributions}
    facts = {
        "python": interpreter_facts(),
        "installers": {"pip": versions.get("pip"), "uv": find_uv()},
        "distributions": distributions,
        "shadowed_distributions": shadowed,
        "torch_build": read_torch_build(distributions),
    }
    # One write: json.dump would issue one per token, which dominates with thousands of distributions.
    sys.stdout.write(json.dumps(facts))


if __name__ == "__main__":
    main()
