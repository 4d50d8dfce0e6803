"""`envdoctor run -- CMD ARGS...`: run a training command so that its next crash explains itself."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List

import click

from envdoctor.capture import record
from envdoctor.capture.bisect import bisect_run
from envdoctor.capture.render import CrashRenderer, one_line
from envdoctor.capture.report import EnvironmentFacts, crash_report, save
from envdoctor.capture.session import run_command
from envdoctor.capture.supervise import Settings
from envdoctor.cli.helptext import epilog
from envdoctor.cli.params import WEEK_S, Seconds
from envdoctor.errors import UsageError
from envdoctor.escape import escape_control
from envdoctor.facts.run_describe import aftermath

DEFAULT_REPORT_DIR = Path("reports")


def save_or_warn(document, directory: Path) -> List[Path]:
    """The saved crash report's files; a report that cannot be saved is a warning, never the command's
    exit status, which stays the command's own."""
    try:
        return save(document, directory)
    except UsageError as error:
        click.echo(f"envdoctor: warning: {error}; the crash report is only shown here", err=True)
        return []


def bisected(run_section: dict) -> None:
    """Add the bisection of the failed command to its run section, before the report judges it; a
    Ctrl-C ends the re-runs and the report is written without it."""
    try:
        run_section["bisection"] = bisect_run(run_section, os.environ, progress=lambda line: click.echo(escape_control(f"envdoctor: {line}", multiline=False), err=True))
    except KeyboardInterrupt:
        click.echo("envdoctor: bisection interrupted; the report is written without it", err=True)


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    epilog=epilog(
        (("N", "COMMAND's own exit status"), ("128+N", "COMMAND was killed by signal N"), ("124", "COMMAND printed nothing for --hang-timeout and was ended"),
         ("126, 127", "COMMAND could not be started")),
        "envdoctor run --hang-timeout 600 -- python train.py --steps 1e6",
    ),
)
@click.option("--report-dir", type=click.Path(file_okay=False, path_type=Path), help="Where to save the crash report [default: ./reports].")
@click.option("--gdb", "under_gdb", is_flag=True, help="Run under gdb for the native backtrace of every thread.")
@click.option("--hang-timeout", type=Seconds(0.1, WEEK_S), metavar="SECONDS", help="Treat this long without any output as a hang: dump every thread's stack and end it.")
@click.option("--sample-interval", type=Seconds(0.01, 3600), default=0.5, show_default=True, metavar="SECONDS", help="How often to sample memory and GPU memory.")
@click.option("--always-report", is_flag=True, help="Write a report even when the command exits cleanly.")
@click.option("--bisect", "bisect", is_flag=True, help="After a crash, hang or failure, re-run COMMAND once per single environment change (threads=1, no CUDA, generic CPU kernels, no LD_LIBRARY_PATH/LD_PRELOAD/PYTHONPATH/user site, MKL on GNU OpenMP), in parallel and bounded in time, to find the change that makes it go away.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(report_dir, under_gdb, hang_timeout, sample_interval, always_report, bisect, command) -> int:
    """Run COMMAND with its output passed through; if it crashes, hangs or fails, explain why."""
    settings = Settings(hang_timeout, sample_interval, under_gdb)
    early = EnvironmentFacts(command, os.environ)
    run_section = run_command(command, settings, os.environ)
    end = run_section["ending"]
    if end["kind"] == "not-started":
        click.echo(escape_control(f"envdoctor: cannot run {command[0]}: {end['start_error']}", multiline=False), err=True)
        return end["exit_status"]
    if bisect and end["kind"] in record.ABNORMAL:
        bisected(run_section)
    if end["kind"] in record.ABNORMAL or always_report:
        document = crash_report(run_section, os.environ, early)
        saved = save_or_warn(document, report_dir or DEFAULT_REPORT_DIR)
        shown = CrashRenderer(document, tuple(str(p) for p in saved))
        click.echo(shown.terminal(color=sys.stderr.isatty() and not os.environ.get("NO_COLOR")), nl=False, err=True)
    else:
        click.echo(one_line(run_section), err=True)
        for line in aftermath(run_section):
            click.echo(f"envdoctor: {line}", err=True)
    return end["exit_status"]
