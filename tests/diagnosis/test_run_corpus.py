"""The diagnosis generalises: real failing programs (tests/data/run/corpus/, each failing for the reason
its first line states) run through `envdoctor run`, and the diagnosis's first entry names that reason.

Each program is a failure of the kind users bring (an environment, a file, the program's own code),
written from the messages users paste into issue threads, not from the rules that judge them.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from conftest import TEST_DATA, run_envdoctor

CORPUS = TEST_DATA / "run" / "corpus"
PROGRAMS = sorted(p for p in CORPUS.iterdir() if p.suffix in (".py", ".sh"))


def expected(program: Path):
    """(cause id, kind or None, confidence) from the program's `# expect:` line."""
    words = program.read_text().splitlines()[0].split(":", 1)[1].split()
    cause, kind, confidence = words
    return cause, None if kind == "-" else kind, confidence


def diagnosed(program: Path, folder: Path) -> dict:
    """`envdoctor run` of `program` in `folder`, and the crash report it saved."""
    shutil.copy(program, folder / program.name)
    command = ["bash", program.name] if program.suffix == ".sh" else [sys.executable, program.name]
    run = run_envdoctor("run", "--report-dir", str(folder / "reports"), "--", *command, env={"PYTHON": sys.executable}, cwd=folder, child=True, timeout=120)
    saved = sorted((folder / "reports").glob("crash-*.json"))
    assert saved, run
    return json.loads(saved[-1].read_text())


def test_the_corpus_is_large_enough_and_every_program_states_its_cause():
    assert len(PROGRAMS) >= 30
    for program in PROGRAMS:
        assert program.read_text().startswith("# expect: "), program.name
        assert expected(program)[2] in ("confirmed", "likely", "possible", "none"), program.name


@pytest.mark.slow
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_the_first_cause_is_the_reason_the_program_failed(program, tmp_path):
    cause, kind, confidence = expected(program)
    report = diagnosed(program, tmp_path)
    first = report["diagnosis"][0]
    assert (first["id"], first["confidence"]) == (cause, confidence), [(c["id"], c["confidence"], c["summary"]) for c in report["diagnosis"]]
    if kind is not None:
        [finding] = [f for f in report["findings"] if f["id"] == cause]
        assert finding["evidence"]["kind"] == kind, finding
    assert all(c["id"] != "run.memory-growth" for c in report["diagnosis"])


@pytest.mark.slow
def test_a_syntax_error_is_placed_at_the_line_that_did_not_compile(tmp_path):
    report = diagnosed(CORPUS / "syntax_error_in_module.sh", tmp_path)
    assert report["diagnosis"][0]["summary"].startswith("Your program raised SyntaxError at shaping.py:2")
