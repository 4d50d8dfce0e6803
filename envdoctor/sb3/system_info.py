"""Parsing the `system_info.txt` SB3 writes into every model since 1.2.0: who saved the file, with what.

Lines look like `- Python: 3.11.7`; the Python line is the most precise statement of the producing
interpreter (knowledge notes §3b).
"""

from __future__ import annotations

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


def parse(text: Optional[str]) -> Dict[str, str]:
    """{"python": "3.11.7", "torch": "2.13.0+cpu", ...}; unknown lines are kept under their own label."""
    found: Dict[str, str] = {}
    for line in (text or "").splitlines():
        label, sep, value = line.strip().lstrip("-").strip().partition(":")
        if sep and label.strip():
            found[KEYS.get(label.strip().lower(), label.strip().lower())] = value.strip()
    return found
