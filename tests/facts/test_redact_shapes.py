"""Secrets by their look: token-shaped values and `password=` assignments never reach a report, wherever they sit."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import run_envdoctor
from envdoctor.codec import encode
from envdoctor.redact import REDACTED, cleaner

SECRETS = {
    "github-classic": "ghp_" + "A1b2C3d4" * 5,
    "github-fine-grained": "github_pat_" + "11ABCDEFG0" * 5,
    "hugging-face": "hf_" + "qWeRtYuIoP" * 4,
    "aws-key-id": "AKIA" + "ABCDEFGHIJKLMNOP",
    "openai-style": "sk-proj-" + "Zx9" * 12,
    "slack": "xoxb-2048-1234567890-abcdefABCDEF",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLXZhbHVl",
}
PLACES = {
    "path-variable": lambda s: f"/opt/{s}/lib:/usr/lib",
    "output-line": lambda s: f"INFO using key {s} for upload",
    "url": lambda s: f"https://{s}@hub.example/repo",
}


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("kind", list(SECRETS))
def test_token_shapes_are_scrubbed_anywhere(kind, place):
    text = PLACES[place](SECRETS[kind])
    cleaned = encode({"value": text, text: [text]}, text=cleaner(()))
    assert SECRETS[kind] not in json.dumps(cleaned) and REDACTED in json.dumps(cleaned)


@pytest.mark.parametrize("line, secret", [
    ("password=hunter2xyz", "hunter2xyz"),
    ("DB_PASSWORD: 'correct horse'", "correct"),
    ("--api-key abcd1234efgh", "abcd1234efgh"),
    ("--token=t0k3nv4lue", "t0k3nv4lue"),
    ("postgresql://trainer:s3cr3tpw@db:5432/runs", "s3cr3tpw"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXk"),
])
def test_assignments_urls_and_keys_lose_their_value_and_keep_their_name(line, secret):
    cleaned = cleaner(())(line)
    assert secret not in cleaned and REDACTED in cleaned


@pytest.mark.parametrize("text", ["torch 2.13.0+cpu", "the token is fine", "sk-learn", "NCCL_SOCKET_IFNAME=eth0",
                                  "/usr/lib/x86_64-linux-gnu", "auth module loaded", "KEY=1"])
def test_ordinary_text_is_kept(text):
    assert cleaner(())(text) == text


def test_a_token_in_ld_library_path_never_reaches_the_json_report():
    token = SECRETS["github-classic"]
    run = run_envdoctor("check", "--no-probe", "--no-save", "--json", "-", env={"LD_LIBRARY_PATH": f"/opt/{token}/lib"})
    assert run.returncode in (0, 1), run
    assert token not in run.stdout


def test_a_password_printed_by_the_command_never_reaches_the_crash_report(tmp_path):
    program = "print('connecting with password=hunter2xyz', flush=True); raise SystemExit(3)"
    run = run_envdoctor("run", "--report-dir", str(tmp_path), "--", sys.executable, "-c", program, timeout=180, child=True)
    assert run.returncode == 3, run
    saved = [p for p in tmp_path.iterdir() if p.suffix in (".json", ".md")]
    assert saved and all("hunter2xyz" not in p.read_text() for p in saved)
    assert "hunter2xyz" in run.stdout  # the command's own output passes through untouched


# --- the home directory: `~` only where a path begins with it -----------------------------------------

HOMES = ("/root", "/home/al", "/home/al.b", "/u/x-1")
# Folders that hold the home's text inside them: neither they nor anything under them is the home.
AROUND = ("/opt/rh/devtoolset-9", "/srv", "/usr/local", "/data/x", "/tmp/a.b")
BEYOND = ("", "/usr/bin/g++", "/bin", "/a b/c")
CONTEXTS = ("{}", "PATH={}:/usr/bin", "/usr/bin:{}", "cd {} && make", "'{}'", '"{}"', "--prefix={}", "({})")
STARTS = ("{}", "PATH={}:/usr/bin", "/usr/bin:{}", "cd {} && make", '"{}"', "--prefix={}")


def generated_paths():
    for home in HOMES:
        for inner in (around + home + beyond for around in AROUND for beyond in BEYOND):
            for context in CONTEXTS:
                yield home, context.format(inner), context.format(inner)
        for beyond in BEYOND[1:]:
            for context in STARTS:
                yield home, context.format(home + beyond), context.format("~" + beyond)
        yield home, home + "x/y", home + "x/y"  # another folder whose name begins with the home's


def test_only_paths_that_begin_with_home_change_and_only_their_start():
    wrong = [(home, text, cleaner([], home)(text), expected) for home, text, expected in generated_paths() if cleaner([], home)(text) != expected]
    assert wrong == []
