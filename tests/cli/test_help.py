"""Every command's --help ends with its exit codes and one example, and --version dates the knowledge
tables: what a user reads first must say what a status means and how the command is used."""

from __future__ import annotations

import datetime
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from conftest import REPO, run_envdoctor
from envdoctor import KNOWLEDGE_DATE
from envdoctor.cli import COMMANDS, cli

ENDING = re.compile(r"\n  Exit codes:\n(?P<codes>(?:    \S.*\n)+)\n  Example:\n    (?P<example>envdoctor\b.*)\n\Z")


def help_of(*command: str) -> str:
    result = CliRunner().invoke(cli, [*command, "--help"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", ["", *sorted(COMMANDS)])
def test_help_ends_with_exit_codes_and_an_example_of_the_command(command):
    ending = ENDING.search(help_of(*command.split()))
    assert ending, help_of(*command.split())[-600:]
    codes = [line.split()[0].rstrip(",") for line in ending["codes"].splitlines()]
    assert {"2", "3", "130"} <= set(codes), codes
    assert ending["example"].startswith(f"envdoctor {command}".rstrip())


def test_version_names_the_date_of_the_knowledge_tables():
    run = run_envdoctor("--version", child=True)  # the version line of a real `python -m envdoctor`
    assert run.returncode == 0, run
    version = run.stdout
    assert version == f"envdoctor, version {__import__('envdoctor').__version__} (knowledge tables of {KNOWLEDGE_DATE})\n"


def test_version_imports_nothing_heavy():
    program = "import sys\nfrom envdoctor.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    print(sorted(m for m in ('rich', 'csv', 'jsonschema', 'psutil', 'envdoctor.engine', 'envdoctor.knowledge', 'envdoctor.proc') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True).stdout.splitlines()[-1]
    assert loaded == "[]"


def test_the_knowledge_date_is_no_older_than_the_last_change_to_a_table():
    last = subprocess.run(["git", "log", "-1", "--format=%cs", "--", "envdoctor/knowledge/*.csv"], cwd=REPO, capture_output=True, text=True)
    if last.returncode != 0 or not last.stdout.strip():
        pytest.skip("no git history of envdoctor/knowledge/ here (an unpacked archive or a shallow clone)")
    assert datetime.date.fromisoformat(KNOWLEDGE_DATE) >= datetime.date.fromisoformat(last.stdout.strip()), "a table changed: check it against its sources and raise envdoctor.KNOWLEDGE_DATE"
