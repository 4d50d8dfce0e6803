"""Keeping reports safe to publish: secrets never by value, the home directory as `~`.

Secret redaction cannot be turned off; `--no-redact` only keeps paths as they are.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable, Mapping

SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|PRIVATE|COOKIE|SESSION|SIGNATURE|(^|_)KEY($|_)|APIKEY|ACCESS_?KEY|_PAT$|DSN$",
    re.IGNORECASE,
)
REDACTED = "<redacted>"
MIN_SECRET_LENGTH = 4  # shorter values ("1", "yes") would erase innocent text everywhere


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def secret_values(environ: Mapping[str, str]) -> list:
    """Values of secret-looking variables, longest first so overlapping secrets are fully removed."""
    values = {v for k, v in environ.items() if is_secret_name(k) and len(v) >= MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def scrub(data: Any, secrets: Iterable[str], home: str = "") -> Any:
    """A copy of JSON-able `data` with secret values replaced and, if `home` is given, home shown as `~`."""
    secrets = list(secrets)
    home = home.rstrip("/")

    def clean(text: str) -> str:
        for secret in secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if home and home in text:
            text = re.sub(re.escape(home) + r"(?=/|$|[:;\s'\"])", "~", text)
        return text

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return clean(value)
        if isinstance(value, Mapping):
            return {clean(str(k)): walk(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(v) for v in value]
        return value

    return walk(data)


def home_directory() -> str:
    home = os.path.expanduser("~")
    return "" if home in ("", "/", "~") else home
