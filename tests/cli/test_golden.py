"""Every view of every command, compared byte for byte with its golden file under tests/data/render/.

The inputs are recorded: reports under tests/data/reports and reports/samples, the facts `fix --from`
reads under tests/data/fix, and under tests/data/render/recorded an `inspect --json` of a hostile model
and the crash report `envdoctor run` saved (its README says how they were made). diff, fleet and fix are
run through the command line in process (click's CliRunner), so the output options are covered too;
check, inspect and run views through their renderers (render.view.Renderer), as a recorded report must be shown as it was
judged. Terminal views are the plain ones a pipe gets: no colour, the renderers' fixed width. The
JSON view of a recorded inspect or crash report is the recorded file itself, byte for byte.

The test never writes a golden file. After a change meant to change a view, rewrite them with

    ENVDOCTOR_UPDATE_GOLDEN=1 .venv-test/bin/python -m pytest tests/cli/test_golden.py -p no:cacheprovider

and review the diff of tests/data/render/ before committing it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Dict

import pytest

from envdoctor.capture.render import CrashRenderer, one_line
from envdoctor.codec import decode
from envdoctor.document import Document
from envdoctor.engine import read_report
from envdoctor.model import Report
from envdoctor.render.view import ReportRenderer
from envdoctor.sb3.render import ModelsRenderer
from conftest import REPO
from helpers.repository_cli import invoked_at_repository

GOLDEN = REPO / "tests" / "data" / "render"
RECORDED = GOLDEN / "recorded"
REPORTS = "tests/data/reports"
SAMPLE = REPO / "reports" / "samples" / "h100-cu130.json"
OLD_DRIVER = REPO / REPORTS / "v100-old-driver.json"
INSPECTED = RECORDED / "inspect-dangerous-model.json"
CRASHED = RECORDED / "run-segv-worker.json"
SEED = "tests/data/fix/seed-py38-torch231-cu121.json"
K80 = "tests/data/fix/driver-470-k80.json"
CRASH_FILES = ("reports/crash-20261123-212752-5a0326.json", "reports/crash-20261123-212752-5a0326.png", "reports/crash-20261123-212752-5a0326.md")
UPDATE = os.environ.get("ENVDOCTOR_UPDATE_GOLDEN") == "1"


def command(*args: str) -> str:
    """What the command writes on stdout, run from the repository root (the paths it shows are relative)."""
    return invoked_at_repository(*args).stdout


def recorded(path: Path) -> Document:
    """A recorded report as a command that read it shows it."""
    return Document.of(read_report(path))


def check_views(name: str, path: Path) -> Dict[str, Callable[[], str]]:
    return {
        f"check-{name}.txt": lambda: ReportRenderer(recorded(path)).terminal(),
        f"check-{name}-verbose.txt": lambda: ReportRenderer(recorded(path)).terminal(verbose=True),
        f"check-{name}.md": lambda: ReportRenderer(recorded(path)).markdown(),
    }


def command_views(name: str, *args: str) -> Dict[str, Callable[[], str]]:
    return {
        f"{name}.txt": lambda: command(*args),
        f"{name}-verbose.txt": lambda: command(*args, "-v"),
        f"{name}.md": lambda: command(*args, "--markdown", "-"),
        f"{name}.json": lambda: command(*args, "--json", "-"),
    }


def fix_views(name: str, *args: str) -> Dict[str, Callable[[], str]]:
    return {
        f"{name}.txt": lambda: command("fix", *args),
        f"{name}.sh": lambda: command("fix", *args, "--format", "sh"),
        f"{name}.json": lambda: command("fix", *args, "--format", "json"),
    }


VIEWS: Dict[str, Callable[[], str]] = {
    **check_views("h100-cu130", SAMPLE),
    **check_views("v100-old-driver", OLD_DRIVER),
    "check-v100-old-driver.json": lambda: ReportRenderer(recorded(OLD_DRIVER)).json(),
    "inspect.txt": lambda: ModelsRenderer(recorded(INSPECTED)).terminal(),
    "inspect-verbose.txt": lambda: ModelsRenderer(recorded(INSPECTED)).terminal(verbose=True),
    "inspect.md": lambda: ModelsRenderer(recorded(INSPECTED)).markdown(),
    "recorded/inspect-dangerous-model.json": lambda: ModelsRenderer(recorded(INSPECTED)).json(),
    "run-crash.txt": lambda: CrashRenderer(recorded(CRASHED), CRASH_FILES).terminal(),
    "run-crash.md": lambda: CrashRenderer(recorded(CRASHED), picture="crash-20261123-212752-5a0326.png").markdown(),
    "recorded/run-segv-worker.json": lambda: CrashRenderer(recorded(CRASHED)).json(),
    "run-clean.txt": lambda: one_line(read_report(CRASHED).run) + "\n",
    **command_views("diff", "diff", f"{REPORTS}/h100-cu130.json", f"{REPORTS}/v100-old-driver.json"),
    **command_views("fleet", "fleet", "--reports", REPORTS, "--workers", "1"),
    **fix_views("fix-pin-cuda", "--pin-cuda", "11.6", "--from", SEED),
    **fix_views("fix-refused", "--pin-cuda", "12.1", "--from", K80),
    **fix_views("fix-mixed-wheels", "--mixed-wheels", "--from", SEED),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_the_view_matches_its_golden_file(name):
    rendered = VIEWS[name]()
    if UPDATE:
        (GOLDEN / name).write_text(rendered, encoding="utf-8")
    assert rendered == (GOLDEN / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(n for n in VIEWS if n.endswith(".json")))
def test_json_views_are_json(name):
    json.loads(VIEWS[name]())


def test_every_golden_file_has_a_view():
    """A golden file left behind by a renamed view would pass unnoticed; those of test_render stay."""
    kept = {"report.txt", "report-verbose.txt", "report.md", "recorded/README.md"}
    assert {p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*") if p.is_file()} == set(VIEWS) | kept


def test_a_zero_width_character_in_a_recorded_name_is_shown_escaped():
    """The views escape what they show as the model reader escapes a member's name: a zero-width space
    would make two names look alike."""
    document = json.loads(INSPECTED.read_text(encoding="utf-8"))
    document["facts"]["models"]["files"][0]["members"][0]["name"] = "data\u200b"
    shown = ModelsRenderer(Document.of(decode(Report, document))).terminal()
    assert "  data\\u200b " in shown and "\u200b" not in shown
