"""Keeping reports safe to publish: secrets never by value, the home directory as `~`.

Secrets are found two ways: by the variable's name (the values of `*_TOKEN`, `*PASSWORD*` … wherever they
appear), and by the value's look, for secrets in places no name announces: a token in a path variable
(`/opt/ghp_…/lib`), `password=…` printed by the user's program into an output tail, credentials in a URL.
Secret redaction cannot be turned off; `--no-redact` only keeps paths as they are.
"""

from __future__ import annotations

import os
import re
from typing import Callable, Iterable, Mapping

SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|PRIVATE|COOKIE|SESSION|SIGNATURE|(^|_)KEY($|_)|APIKEY|ACCESS_?KEY|_PAT$|DSN$",
    re.IGNORECASE,
)
REDACTED = "<redacted>"
# Token formats published by their issuers: GitHub (classic and fine-grained), Hugging Face, AWS access key
# ids, OpenAI-style `sk-` keys, Slack, JSON Web Tokens, and PEM private keys.
TOKEN_SHAPES = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}|hf_[A-Za-z0-9]{30,}|(?:AKIA|ASIA)[A-Z0-9]{16}"
    r"|sk-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
    re.DOTALL,
)
# `password=…`, `token: …`, `--api-key …`: the name stays, the value goes.
NAMES = r"(?:password|passwd|passphrase|token|secret|api[_-]?key|access[_-]?key)"
ASSIGNMENT = re.compile(
    rf"(?i)((?:--{NAMES}(?:=|\s+)|(?<![A-Za-z0-9]){NAMES}[\"']?\s*[=:]\s*)[\"']?)(?!<redacted>)[^\s\"',;&]{{4,}}"
)
URL_CREDENTIALS = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@", re.IGNORECASE)
MIN_SECRET_LENGTH = 4  # shorter values ("1", "yes") would erase innocent text everywhere
# The home directory is `~` only where a path begins with it: at the start of the text or after what
# separates paths and words (`PATH=/root/bin:/root/x`, `"/root/a b"`, `cd /root`), never inside another
# path (`/opt/rh/devtoolset-9/root/usr/bin/g++` with HOME=/root names a file that `~` would not).
PATH_START = r"(?<![^\s=:;,'\"(\[{<>|])"
PATH_GOES_ON = r"(?=/|$|[:;\s'\"])"


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def secret_values(*environs: Mapping[str, str]) -> list:
    """Values of secret-looking variables of every environment, longest first so overlapping secrets are fully removed."""
    values = {v for environ in environs for k, v in environ.items() if is_secret_name(k) and len(v) >= MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def cleaner(secrets: Iterable[str], home: str = "") -> Callable[[str], str]:
    """What one text becomes in a report that is safe to publish: `secrets` replaced, anything shaped
    like a secret replaced and, if `home` is given, home shown as `~`."""
    secrets = list(secrets)
    home = home.rstrip("/")

    def clean(text: str) -> str:
        for secret in secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        text = scrub_shapes(text)
        if home and home in text:
            text = tilde_outside_quotes(text, home)
            text = re.sub(PATH_START + re.escape(home) + PATH_GOES_ON, "~", text)
        return text

    return clean


def tilde_outside_quotes(text: str, home: str) -> str:
    """A quoted home path (`'HOME/rest'`, as shlex.quote writes it) as `~/'rest'`: the shell expands `~`
    only outside quotes, so a pasted command still names the same file."""
    text = re.sub(PATH_START + "'" + re.escape(home) + "/", "~/'", text)
    return re.sub(PATH_START + "'" + re.escape(home) + "'", "~", text)


def scrub_shapes(text: str) -> str:
    """`text` without anything that looks like a secret, whatever variable or output line it sits in."""
    text = TOKEN_SHAPES.sub(REDACTED, text)
    text = ASSIGNMENT.sub(lambda m: m.group(1) + REDACTED, text)
    return URL_CREDENTIALS.sub(lambda m: m.group(1) + REDACTED + "@", text)


def home_directory() -> str:
    home = os.path.expanduser("~")
    return "" if home in ("", "/", "~") else home
