"""`envdoctor check` and `envdoctor checks`: diagnose this environment, and list what is checked.

The rules, the diagnosis and the views are imported inside the commands: `check` starts the
collectors' children first, and those modules load while the children run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional, Sequence, Tuple

import click

from envdoctor.cli import EXIT_FINDINGS, EXIT_OK
from envdoctor.cli.helptext import FAIL_ON_EXITS, epilog
from envdoctor.cli.options import emit, output_options, resolve_python
from envdoctor.cli.params import DAY_S, Seconds
from envdoctor.cli.stdout import note
from envdoctor.collect import CollectContext, begun
from envdoctor.collect.imports import DEFAULT_MODULE_TIMEOUT_S, ImportOptions
from envdoctor.errors import UsageError
from envdoctor.probe.runner import DEFAULT_TIMEOUT_S, ProbeOptions
from envdoctor.proc.children import children_end_on_interrupt

if TYPE_CHECKING:
    from envdoctor import engine
    from envdoctor.catalogue import Catalogue
    from envdoctor.checks import Check
    from envdoctor.document import Document

DEFAULT_REPORT_DIR = Path("reports")


def split_ids(values: Iterable[str]) -> Tuple[str, ...]:
    """`--skip a,b --skip c` → ("a", "b", "c")."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def policy_rules(policy_file: Optional[str]) -> Sequence["Check"]:
    """The rules of the policy named by --policy as checks, its file read and validated before anything
    runs; the TOML reader and the rules load only when a policy is named."""
    if not policy_file:
        return ()
    from envdoctor import policy

    return policy.checks_for(policy.load(Path(policy_file)))


def catalogue_for(policy_file: Optional[str], selection: engine.Selection) -> Optional[Catalogue]:
    """The rules the command must know before anything runs: this installation's and the policy's,
    once --only and --skip are known to name only their ids and domains (every id a report shows:
    checks, plugins, policy rules, links). None when neither a policy nor a selection is given: the
    engine then finds the rules itself while the collectors wait on their children."""
    from envdoctor.catalogue import find

    policy = policy_rules(policy_file)
    if not policy and not selection.only and not selection.skip:
        return None
    catalogue = find(policy)
    for ids, option in ((selection.only, "--only"), (selection.skip, "--skip")):
        unknown = catalogue.unknown(ids)
        if unknown:
            raise UsageError(f"{option}: unknown check id or domain {', '.join(unknown)} (see `envdoctor checks`)")
    return catalogue


def selects_probe(catalogue: Optional[Catalogue], selection: engine.Selection) -> bool:
    """The ladder runs only when some selected rule judges its result (any does when nothing was selected)."""
    return catalogue is None or any("probe" in c.requires for c in catalogue.select(selection.only, selection.skip).first_pass)


def probe_options(timeout: float) -> ProbeOptions:
    """The ladder with its progress on stderr, so a slow or hanging stage shows while it happens."""
    from envdoctor.probe.progress import ProgressPrinter

    live = sys.stderr.isatty()  # the running clock rewrites its line: only where a terminal shows it
    return ProbeOptions(timeout_s=timeout, on_event=ProgressPrinter(lambda text: click.echo(text, err=True, nl=False), live=live))


def saved(document: Document, report_dir: Optional[Path]) -> None:
    """Save the report before anything is shown, so an unwritable stdout cannot lose it. The
    automatic ./reports save that fails (a read-only working directory) is a warning, not a failed
    check; a --report-dir the user named that cannot take it is an error."""
    from envdoctor.store import save_report

    try:
        path = save_report(document, report_dir or DEFAULT_REPORT_DIR)
    except UsageError as error:
        if report_dir:
            raise
        note(f"envdoctor: warning: report not saved: {error}")
        return
    note(f"Report saved: {path}  (attach it to your bug ticket)")


@click.command(epilog=epilog(FAIL_ON_EXITS, "envdoctor check --python ~/venvs/train --fail-on warning --markdown ticket.md"))
@click.option("--python", "python", metavar="PATH", help="Interpreter (or venv folder) to diagnose [default: this one].")
@output_options
@click.option("--report-dir", type=click.Path(file_okay=False, path_type=Path), help="Where to save the JSON report [default: ./reports].")
@click.option("--no-save", is_flag=True, help="Do not save the JSON report.")
@click.option("--fail-on", type=click.Choice(["info", "warning", "error"]), default="error", show_default=True, help="Exit 1 on findings at or above this severity.")
@click.option("--only", multiple=True, metavar="ID", help="Run only these checks or domains (repeatable, comma-separated).")
@click.option("--skip", multiple=True, metavar="ID", help="Skip these checks or domains (repeatable, comma-separated).")
@click.option("--from", "from_report", metavar="REPORT.json", help="Judge the facts recorded in a report instead of this machine.")
@click.option("--policy", "policy_file", metavar="POLICY.toml", help="Also judge against the team's rules in this policy file (findings policy.*).")
@click.option("--no-redact", is_flag=True, help="Keep home-directory paths (secrets are always redacted).")
@click.option("--no-probe", is_flag=True, help="Do not run the probe ladder (numpy → torch → CUDA → MaskablePPO in a child).")
@click.option("--probe-timeout", type=Seconds(1, DAY_S), default=DEFAULT_TIMEOUT_S, show_default=True, metavar="SECONDS", help="Time limit for the probe ladder; above the default, every stage gets that much more time too.")
@click.option("--imports", is_flag=True, help="Also import every installed distribution's top-level modules, each batch in its own child.")
@click.option("--import-timeout", type=Seconds(0.1, DAY_S), default=DEFAULT_MODULE_TIMEOUT_S, show_default=True, metavar="SECONDS", help="Time limit for one module's import (with --imports).")
@click.option("--model", "models", multiple=True, metavar="MODEL.zip", help="Also inspect this SB3 model file statically (repeatable).")
@click.option("-v", "--verbose", is_flag=True, help="Show passing checks, evidence and timings.")
def check(python, json_out, markdown_out, report_dir, no_save, fail_on, only, skip, from_report, policy_file, no_redact, no_probe, probe_timeout, imports, import_timeout, models, verbose) -> int:
    """Diagnose the environment and print what will crash, why, and how to fix it."""
    if report_dir and no_save:
        raise UsageError("--report-dir and --no-save exclude each other")
    if imports and from_report:
        raise UsageError("--imports and --from exclude each other: a recorded report is judged with the imports it recorded")
    only_ids, skip_ids = split_ids(only), split_ids(skip)
    target = None if from_report else resolve_python(python)
    with children_end_on_interrupt():
        # With nothing to validate first (no policy, no selection), the collectors' children start now.
        early = target is not None and not (policy_file or only_ids or skip_ids)
        gathering = begun(CollectContext(target, dict(os.environ))) if early else None
        from envdoctor import engine
        from envdoctor.document import Document

        selection = engine.Selection(only=only_ids, skip=skip_ids)
        catalogue = catalogue_for(policy_file, selection)
        if from_report:
            document = Document.of(engine.rejudge(engine.read_report(Path(from_report)), selection, catalogue))
        else:
            probe = None if no_probe or not selects_probe(catalogue, selection) else probe_options(probe_timeout)
            import_options = ImportOptions(module_timeout_s=import_timeout) if imports else None
            document = engine.diagnose(target, selection, redact_paths=not no_redact, probe=probe, models=models, imports=import_options, catalogue=catalogue, gathered=gathering)
    if not no_save and (report_dir or not from_report):
        saved(document, report_dir)
    from envdoctor.model import Severity
    from envdoctor.render.view import ReportRenderer

    emit(ReportRenderer(document), json_out, markdown_out, verbose)
    failing = engine.at_or_above(document.report.findings, Severity(fail_on))
    return EXIT_FINDINGS if failing else EXIT_OK


@click.command("checks", epilog=epilog((("0", "the rules were listed"),), "envdoctor checks | grep cuda"))
@click.option("--policy", "policy_file", metavar="POLICY.toml", help="Also list the rules of this policy file, as `check --policy` judges them.")
def list_checks(policy_file) -> int:
    """List every rule a report counts (checks, plugins' checks, linking rules) with its id and what it looks for."""
    from envdoctor.catalogue import find

    catalogue = find(policy_rules(policy_file))
    width = max(len(c.id) for c in catalogue.rules)
    for c in sorted(catalogue.rules, key=lambda c: c.id):
        click.echo(f"{c.id.ljust(width)}  {c.summary}")
    for name, error in catalogue.failures:
        click.echo(f"(plugin {name!r} failed to load: {error})", err=True)
    return EXIT_OK
