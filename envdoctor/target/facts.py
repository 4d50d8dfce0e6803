"""Facts about the interpreter this script runs under, printed as one JSON document.

Stdlib only, Python 3.8 syntax, nothing of the diagnosed stack imported: distributions are read
from their metadata files as importlib.metadata's email parser reads them, torch's build from
torch/version.py as text.
"""

import errno
import io
import json
import os
import platform
import re
import shutil
import site
import stat
import sys
import sysconfig

METADATA_FILES = ("METADATA", "PKG-INFO")
HEADER_LIMIT = 4 * 2 ** 20  # characters; real headers (a License with bundled licences) stay far below
CHUNK = 2 ** 16


SEPARATORS = re.compile(r"[-_.]+")
LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # the email parser's lines: \r\n, \r or \n end one
HEADER_LINE = re.compile(r"[\041-\071\073-\176]*:")  # printable characters but the colon, then a colon


def open_regular(path):
    """`path` opened for reading in binary if it is a regular file, OSError otherwise: a FIFO would
    block the open until a writer comes, a device would never end (the doctor's envdoctor/files.py
    does the same; this script cannot import it)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return os.fdopen(descriptor, "rb")


def normalize(name):
    return SEPARATORS.sub("-", name).lower()


def header_block(stream):
    """The text before the first empty line (the header part of RFC 822 metadata), at most
    HEADER_LIMIT characters: the description after it may be megabytes and is never needed."""
    text = ""
    while len(text) < HEADER_LIMIT:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        searched_from = max(len(text) - 1, 0)
        text += chunk
        end = ("\n" + text).find("\n\n", searched_from)
        if end >= 0:
            return text[:end]
    return text[:HEADER_LIMIT]


def parsed_headers(block):
    """(name, value) of each header of an RFC 822 header block, exactly as importlib.metadata's email
    parser (compat32 policy) reads them, without loading the email package (a fifth of this script's
    time): a header line starts a field, a line starting with a space or tab continues the value (even
    a whitespace-only one), the value keeps its folds and loses its leading blanks and trailing
    newline, and the first line that is neither ends the headers."""
    fields, current = [], None
    lines = LINES.findall(block)
    for number, line in enumerate(lines):
        if line[:1] in (" ", "\t"):
            if current is not None:
                current.append(line)
            continue
        current = None
        if line.startswith("From "):
            if number == len(lines) - 1 and number:
                break  # the body's first line
            continue  # an envelope line: not a header
        if not HEADER_LINE.match(line):
            break
        name, _, value = line.partition(":")
        if name:
            current = [value.lstrip(" \t")]
            fields.append((name, current))
    return [(name, "".join(parts).rstrip("\r\n")) for name, parts in fields]


def read_headers(path):
    """Name, Version, Requires-Dist and Provides-Extra, as importlib.metadata reads them."""
    with io.TextIOWrapper(open_regular(path), encoding="utf-8", errors="replace") as stream:
        fields = parsed_headers(header_block(stream))
    values = {}
    for name, value in fields:
        values.setdefault(name.lower(), []).append(value)
    headers = {"requires": values.get("requires-dist", []), "extras": values.get("provides-extra", [])}
    for key in ("name", "version"):
        if key in values:
            headers[key] = values[key][0].strip()
    return headers


def egg_info_requirement(line, section):
    """One requires.txt line as a Requires-Dist value, the way importlib.metadata converts it:
    a section `[extra:marker]` becomes `; (marker) and extra == "extra"`."""
    extra, _, markers = section.partition(":")
    if extra and markers:
        markers = "(%s)" % markers
    conditions = [c for c in (markers, extra and 'extra == "%s"' % extra) if c]
    space = " " if "@" in line else ""
    return line + space + ("; " + " and ".join(conditions) if conditions else "")


def read_egg_info_requires(folder):
    """(requirements, extras) from an .egg-info folder's requires.txt, where egg-info keeps them."""
    try:
        with io.TextIOWrapper(open_regular(os.path.join(folder, "requires.txt")), encoding="utf-8", errors="replace") as stream:
            lines = stream.read(HEADER_LIMIT).splitlines()
    except OSError:
        return [], []
    requires, extras, section = [], [], ""
    for line in (raw.strip() for raw in lines):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            extra = section.partition(":")[0]
            if extra and extra not in extras:
                extras.append(extra)
            continue
        requires.append(egg_info_requirement(line, section))
    return requires, extras


def metadata_file(entry_path):
    for name in METADATA_FILES:
        candidate = os.path.join(entry_path, name)
        if os.path.isfile(candidate):
            return candidate
    return entry_path if os.path.isfile(entry_path) else None


def read_distribution(entry_path):
    """The headers of one .dist-info/.egg-info entry, or None when it has no readable metadata."""
    path = metadata_file(entry_path)
    if path is None:
        return None
    try:
        headers = read_headers(path)
    except OSError:
        return None
    if entry_path.endswith(".egg-info") and os.path.isdir(entry_path) and not headers["requires"]:
        requires, extras = read_egg_info_requires(entry_path)
        headers["requires"] = requires
        headers["extras"] = headers["extras"] or extras
    return headers


def scan_distributions(paths):
    """Every distribution on sys.path, the first of a name winning, as for the importer; and pip's
    leftovers: what an install or uninstall moves aside under a name starting with `~` (pip ignores
    them as invalid distributions, so they are not counted as installed)."""
    found, shadowed, leftovers, seen = [], [], [], set()
    for location in paths:
        try:
            entries = sorted(os.listdir(location))
        except OSError:
            continue
        for entry in entries:
            is_metadata = entry.endswith((".dist-info", ".egg-info"))
            headers = read_distribution(os.path.join(location, entry)) if is_metadata else None
            if entry.startswith("~"):
                leftovers.append({"location": location, "entry": entry, "name": headers.get("name") if headers else None})
                continue
            if headers is None or not headers.get("name"):
                continue
            record = {
                "name": headers["name"],
                "version": headers.get("version", ""),
                "location": location,
                "metadata": entry,
                "requires": headers["requires"],
                "extras": headers["extras"],
            }
            key = normalize(headers["name"])
            (shadowed if key in seen else found).append(record)
            seen.add(key)
    return found, shadowed, leftovers


def read_torch_build(distributions):
    """torch/version.py's __version__, cuda, hip and git_version, read as text without importing torch."""
    for dist in distributions:
        if normalize(dist["name"]) != "torch":
            continue
        path = os.path.join(dist["location"], "torch", "version.py")
        try:
            with io.TextIOWrapper(open_regular(path), encoding="utf-8") as stream:
                text = stream.read(HEADER_LIMIT)
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
        "stdlib_paths": sorted({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib")}),
    }


def main():
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    distributions, shadowed, leftovers = scan_distributions(paths)
    versions = {normalize(d["name"]): d["version"] for d in distributions}
    facts = {
        "python": interpreter_facts(),
        "installers": {"pip": versions.get("pip"), "uv": find_uv()},
        "distributions": distributions,
        "shadowed_distributions": shadowed,
        "pip_leftovers": leftovers,
        "torch_build": read_torch_build(distributions),
    }
    # One write: json.dump would issue one per token, which dominates with thousands of distributions.
    sys.stdout.write(json.dumps(facts))


if __name__ == "__main__":
    main()
