"""The crash report: the run section, its verdicts, and the environment findings of `check`.

Saved like every report (JSON via the store), with the Markdown and the memory picture beside it
under the same name, so one folder holds everything a bug ticket needs.
"""

from __future__ import annotations

import shutil
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import List, Mapping, Optional, Sequence, Tuple

from envdoctor import engine
from envdoctor.capture import chart, opened
from envdoctor.capture.render import markdown_report
from envdoctor.collect import CollectContext, begun
from envdoctor.document import Document
from envdoctor.errors import UsageError
from envdoctor.knowledge.errors import known_errors
from envdoctor.store import save_report, write_private

PYTHON_NAMES = ("python", "pypy")


def interpreter_of(argv: Sequence[str]) -> str:
    """The Python the command runs (`python x.py`, a console script's shebang), else the doctor's own:
    its environment is the one whose findings explain the crash."""
    program = shutil.which(argv[0]) or argv[0]
    if Path(program).name.startswith(PYTHON_NAMES):
        return program
    try:
        with open(program, "rb") as stream:
            first = stream.readline(512).decode(errors="replace")
    except OSError:
        return sys.executable
    words = first[2:].split() if first.startswith("#!") else []
    if words and Path(words[0]).name == "env" and len(words) > 1:
        words = [shutil.which(words[1]) or words[1]]
    if words and Path(words[0]).name.startswith(PYTHON_NAMES):
        return words[0]
    return sys.executable


def program_interpreter(run: Mapping) -> str:
    """The interpreter the program really ran under (as the Python process that failed reported), else
    the one its command line names."""
    process = opened.diagnosed_process(run)
    executable = process.get("executable") if process else None
    return executable if executable and Path(executable).exists() else interpreter_of(run["command"])


class EnvironmentFacts:
    """`check`'s facts for the interpreter the command names, gathered in a thread while the command
    runs: a crash report then costs the judging, not the collecting. Used only where the program turns
    out to have run with that interpreter and environment."""

    def __init__(self, argv: Sequence[str], environ: Mapping[str, str]):
        self.python, self.environ = interpreter_of(argv), dict(environ)
        self.future = begun(CollectContext(self.python, self.environ))
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="envdoctor-errors")
        pool.submit(known_errors)  # the error table compiled while the command runs, not after it failed
        pool.shutdown(wait=False)

    def matching(self, python: str, environ: Mapping[str, str]) -> "Optional[Future[Tuple[dict, dict]]]":
        return self.future if python == self.python and dict(environ) == self.environ else None


def crash_report(run: dict, environ: Mapping[str, str], early: Optional[EnvironmentFacts] = None) -> Document:
    """The run judged, by one runner, with what `check` finds (no probe ladder) for the interpreter and
    environment the program really had, and with the model files it opened; without the secrets of
    that environment and of the doctor's own `environ`."""
    python, real = program_interpreter(run), opened.real_environment(run, environ)
    gathered = early.matching(python, real) if early is not None else None
    return engine.diagnose(python, engine.Selection(), environ=real, run=run, models=opened.opened_models(run), gathered=gathered, secrets_also_in=(environ,))


def save(document: Document, directory: Path) -> List[Path]:
    """JSON, Markdown and (when memory was sampled) the PNG timeline, side by side."""
    report = document.report
    saved = [save_report(document, directory, prefix="crash")]
    stem = saved[0].with_suffix("")
    picture = chart.picture(report.run)
    picture_name = None
    try:
        if picture:
            saved.append(stem.with_suffix(".png"))
            write_private(saved[-1], picture)
            picture_name = saved[-1].name
        saved.append(stem.with_suffix(".md"))
        write_private(saved[-1], markdown_report(report, picture_name))
    except OSError as error:
        raise UsageError(f"cannot save the report in {directory}: {error.strerror or error}") from None
    return saved
