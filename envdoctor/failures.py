"""One classifier for the error text of a failure: a failed import (`check --imports`), a failed probe
stage, or the user's own command (`envdoctor run`).

It reads the messages the failing layer writes: NumPy's own for an extension built for the other
NumPy ABI (numpy/_core/_multiarray_umath.py, numpy/core/__init__.py; "numpy.dtype size changed" from
Cython's type-size check), the dynamic loader's (`version 'GLIBC_2.34' not found`, `cannot open shared
object file`, `undefined symbol`), CPython's ("partially initialized module", "No module named"), and
CUDA's and PyTorch's ("CUDA out of memory", "no kernel image is available for execution on the device").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

NUMPY_ABI = re.compile(
    r"numpy\.dtype size changed|compiled using NumPy 1\.x cannot be run in|_ARRAY_API not found|"
    r"numpy\.core\.(multiarray|umath) failed to import|No module named 'numpy\.core\._multiarray_umath'"
)
NO_MODULE = re.compile(r"No module named '([^']+)'")
# Most specific first: a message may match more than one (a CUDA error names its library too).
PATTERNS = (
    ("cuda-out-of-memory", re.compile(r"CUDA out of memory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|torch\.(?:cuda\.)?OutOfMemoryError"), "ran out of GPU memory"),
    ("host-out-of-memory", re.compile(r"^MemoryError\b|std::bad_alloc|Cannot allocate memory", re.MULTILINE), "ran out of host memory"),
    ("no-kernel-image", re.compile(r"no kernel image is available for execution on the device|CUDA error: invalid device function"), "has no GPU kernels for this GPU's architecture"),
    ("glibc", re.compile(r"version [`'](GLIBC_[\d.]+)' not found"), "needs a newer glibc than this system's"),
    ("libstdcxx", re.compile(r"version [`']((?:GLIBCXX|CXXABI)_[\d.]+)' not found"), "needs a newer libstdc++ than the one loaded"),
    ("missing-library", re.compile(r"([\w.+-]+\.so[\w.]*): cannot open shared object file"), "needs a shared library that is not installed"),
    ("undefined-symbol", re.compile(r"undefined symbol: (\S+)"), "was built against another version of a library it links"),
    ("circular-import", re.compile(r"partially initialized module '([^']+)'"), "hits a circular import"),
    ("illegal-instruction", re.compile(r"Illegal instruction"), "uses a CPU instruction this CPU does not have"),
)


# What each kind is, named for a sentence about the process that failed.
NAMES = {
    "numpy-abi": "an extension built for another NumPy ABI",
    "cuda-out-of-memory": "CUDA out of memory",
    "host-out-of-memory": "host memory exhausted",
    "no-kernel-image": "no GPU kernels for this GPU's architecture",
    "glibc": "a glibc older than a library needs",
    "libstdcxx": "a libstdc++ older than a library needs",
    "missing-library": "a shared library that is not installed",
    "undefined-symbol": "a library built against another version of one it links",
    "circular-import": "a circular import",
    "illegal-instruction": "a CPU instruction this CPU does not have",
    "missing-module": "a module that is not installed",
    "error": "an exception",
}


@dataclass(frozen=True)
class Failure:
    """A failure, classified: its kind, the name the error gives (library, module, symbol), its first line."""

    kind: str
    what: str
    named: str
    first_line: str

    @property
    def name(self) -> str:
        return NAMES.get(self.kind, self.kind)


def first_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[0][:300] if lines else ""


def classify_message(message: str, text: str, line: str) -> Failure:
    """The failure `message` (an exception's "Type: text") names, reading `text` (the message with the
    output around it) for the layers' own words; `line` is what is shown of it."""
    if NUMPY_ABI.search(text):
        return Failure("numpy-abi", "was built for another NumPy ABI", "", line)
    for kind, pattern, what in PATTERNS:
        match = pattern.search(text)
        if match:
            return Failure(kind, what, next(iter(match.groups()), None) or "", line)
    missing = NO_MODULE.search(message)
    if missing:
        return Failure("missing-module", "needs a module that is not installed", missing.group(1), line)
    return Failure("error", "raises an exception", "", line)


def classify_exception(exception: Optional[dict], output: str = "") -> Optional[Failure]:
    """A parsed exception ({"type", "message"}) classified, with the output around it; None without one."""
    if not exception:
        return None
    message = f"{exception.get('type')}: {exception.get('message', '')}"
    return classify_message(message, f"{message}\n{output}", f"{exception.get('type')}: {first_line(exception.get('message', ''))}")
