"""Parsing the `system_info.txt` SB3 writes into every model since 1.2.0: who saved the file, with what.

Lines look like `- Python: 3.11.7`; the Python line is the most precise statement of the producing
interpreter (docs/knowledge/sb3-model-files.md §3b), so it is kept only when it has the shape of a real CPython version
(`platform.python_version()`: 2.0–2.7 or 3.0–3.30, a micro, maybe a pre-release or `+`). Anything else
is recorded under `python_unrecognised` and never names the producer. A file without a single line SB3
writes is recorded as `unrecognised`, so it is told apart from a model that has none.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

KEYS = {
    "os": "os",
    "python": "python",
    "stable-baselines3": "stable_baselines3",
    "pytorch": "torch",
    "gpu enabled": "gpu_enabled",
    "numpy": "numpy",
    "cloudpickle": "cloudpickle",
    "gymnasium": "gymnasium",
    "openai gym": "gym",
}
PYTHON_VERSION = re.compile(r"(?P<major>[23])\.(?P<minor>\d{1,2})\.\d{1,3}(?:(?:a|b|rc)\d{1,3})?\+?")
MAX_MINOR = {2: 7, 3: 30}


def python_version(text: str) -> bool:
    """Whether `text` is a CPython version as platform.python_version() writes it."""
    match = PYTHON_VERSION.fullmatch(text)
    return bool(match) and int(match["minor"]) <= MAX_MINOR[int(match["major"])]


def parse(text: Optional[str]) -> Dict[str, str]:
    """{"python": "3.11.7", "torch": "2.13.0+cpu", ...}; unknown lines are kept under their own label."""
    found: Dict[str, str] = {}
    for line in (text or "").splitlines():
        label, sep, value = line.strip().lstrip("-").strip().partition(":")
        if sep and label.strip():
            found[KEYS.get(label.strip().lower(), label.strip().lower())] = value.strip()
    if "python" in found and not python_version(found["python"]):
        found["python_unrecognised"] = found.pop("python")
    if text is not None and not any(key in found for key in (*KEYS.values(), "python_unrecognised")):
        found["unrecognised"] = f"{len(text)} characters, none of them a line SB3 writes"
    return found
