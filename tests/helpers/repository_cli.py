"""The command line run in this process from the repository root, as the golden views and the README
sample show it: the paths it prints are relative to the root."""

from __future__ import annotations

import os

from click.testing import CliRunner, Result

from conftest import REPO
from envdoctor.cli import cli


def invoked_at_repository(*args: str) -> Result:
    """`envdoctor ARGS` through click's CliRunner with the repository root as the working directory."""
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)
    finally:
        os.chdir(cwd)
