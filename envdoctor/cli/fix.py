"""`envdoctor fix`: print a plan that repairs the environment; carry it out only with --apply.

Exit codes: 0 planned (a new environment planned instead of this one included), applied and
verified, or nothing to do; 1 the plan is refused with nothing offered instead, applying it was
refused, or applying it failed (and was rolled back); 2 bad usage.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Optional

import click

from envdoctor import engine
from envdoctor.cli import EXIT_FINDINGS, EXIT_OK
from envdoctor.cli.check import DEFAULT_REPORT_DIR
from envdoctor.cli.helptext import epilog
from envdoctor.cli.options import STDOUT, resolve_python, write_output
from envdoctor.errors import UsageError
from envdoctor.facts import UnusableFacts
from envdoctor.fix import apply as applying
from envdoctor.fix import installer as installers
from envdoctor.fix import record as records
from envdoctor.fix.inputs import gather
from envdoctor.fix.mixed_wheels import plan_mixed_wheels
from envdoctor.fix import dry_run
from envdoctor.fix.pin_cuda import COMPANIONS, Request, plan_pin_cuda
from envdoctor.fix.plan import Plan
from envdoctor.fix.releases import OFFLINE, PyPIJson, ReleaseIndex, WheelFolder
from envdoctor.fix.render import PlanRenderer
from envdoctor.fix.threads import plan_threads

SECTIONS = {"pin-cuda": ("target", "gpu", "pythons"), "mixed-wheels": ("target",), "threads": ("cpu", "environ")}


def chosen_action(pin_cuda, mixed_wheels, threads, rollback) -> str:
    chosen = [name for name, on in (("pin-cuda", pin_cuda), ("mixed-wheels", mixed_wheels), ("threads", threads), ("rollback", rollback)) if on]
    if len(chosen) != 1:
        raise UsageError("choose one of --pin-cuda X.Y, --mixed-wheels, --threads or --rollback RECORD")
    return chosen[0]


def read_facts(action: str, python: Optional[str], from_report: Optional[str]) -> tuple:
    """(facts, interpreter): collected now, or as recorded in a report."""
    if from_report:
        report = engine.read_report(Path(from_report))
        target = report.facts.get("target")
        recorded = target.get("python") if isinstance(target, Mapping) else None
        executable = recorded.get("executable") if isinstance(recorded, Mapping) else None
        return report.facts, executable if isinstance(executable, str) and executable else report.target_python
    target = resolve_python(python)
    return gather(target, SECTIONS[action]), target


def release_index(wheels: Optional[str], offline: bool) -> ReleaseIndex:
    if wheels is not None:
        if not Path(wheels).is_dir():
            raise UsageError(f"--wheels {wheels}: not a folder")
        return WheelFolder(Path(wheels))
    return OFFLINE if offline else PyPIJson()


def planned(action, facts, python, installer_name, request, index: ReleaseIndex, from_report: Optional[str], offline: bool) -> tuple:
    """`make_plan`; facts of a recorded report that no plan can read are a usage error naming the report."""
    try:
        return make_plan(action, facts, python, installer_name, request, index, live=not (from_report or offline))
    except UnusableFacts as error:
        if not from_report:
            raise
        raise UsageError(f"{from_report}: {error}; plan from a report of this envdoctor's own, or without --from") from None


def make_plan(action, facts, python, installer_name, request, index: ReleaseIndex, live: bool) -> tuple:
    """(plan, installer) for the action; threads need no installer. A live pin-cuda plan (this
    machine's environment, not offline) is also resolved by pip's dry run."""
    if action == "threads":
        return plan_threads(facts, python), None
    installer = installers.choose(facts.get("target", {}), python, installer_name)
    if action == "pin-cuda":
        plan = plan_pin_cuda(facts, installer, request, index)
        if live and installer.name == "pip":
            plan = dry_run.resolved(plan, facts.get("target", {}).get("installers", {}).get("pip"))
        return plan, installer
    return plan_mixed_wheels(facts, installer), installer


def show(shown: PlanRenderer, fmt: str, json_out: Optional[str]) -> None:
    """The plan (and its result) in the format asked for; a text plan was shown before it was carried out."""
    if json_out:
        write_output(shown.json(), json_out)
    if json_out == STDOUT:
        return
    if fmt == "json":
        click.echo(shown.json(), nl=False)
    elif fmt == "sh":
        click.echo(shown.sh(), nl=False)
    elif shown.result is not None:
        click.echo(shown.terminal(), nl=False)


NO_ANSWER = "no answer at the prompt: standard input is closed or at its end; pass --yes to carry out the plan without asking"


def prompt(plan: Plan) -> bool:
    """Ask on standard input; no input at all is a usage error, never a yes and never a traceback."""
    if sys.stdin is None or sys.stdin.closed:
        raise UsageError(NO_ANSWER)
    count = len(plan.changes)
    try:
        return click.confirm(f"Carry out {count} step{'s' if count != 1 else ''} in {plan.python}?", default=False, err=True)
    except click.exceptions.Abort as error:
        if isinstance(error.__context__, EOFError):
            click.echo(err=True)  # end the question's line, so the error is a line of its own
            raise UsageError(NO_ANSWER) from None
        raise


def progress(line: str) -> None:
    click.echo(line, err=True)


def rollback_installer(record: records.Record, record_path: str, python: Optional[str], installer_name: Optional[str]) -> installers.Installer:
    """The installer of the interpreter the user named (or this one), never one a record names: a record
    is data, and restoring it into another environment than it was taken of would wreck that one."""
    target = resolve_python(python)
    recorded = record.installer.python
    if not records.belongs_to(record, target):
        raise UsageError(
            f"{record_path} records the environment of {recorded}, not {target}; "
            f"to restore it there: envdoctor fix --rollback {shlex.quote(record_path)} --python {shlex.quote(recorded)}"
        )
    facts = gather(target, ("target",))
    return installers.choose(facts.get("target", {}), target, installer_name or record.installer.name)


def run_rollback(record_path: str, python: Optional[str], installer_name: Optional[str], yes: bool, fmt: str, json_out: Optional[str]) -> int:
    record = records.load(Path(record_path))
    record = replace(record, installer=rollback_installer(record, record_path, python, installer_name))
    plan = applying.plan_restore(record)
    if fmt == "text" and json_out != STDOUT:
        click.echo(PlanRenderer(plan).terminal(), nl=False)
    result = applying.restore(record, plan, progress, confirm=applying.always if yes else prompt)
    show(PlanRenderer(plan, result), fmt, json_out)
    return EXIT_OK if result.outcome.succeeded else EXIT_FINDINGS


@click.command(epilog=epilog((("0", "planned, applied, or nothing to do"), ("1", "refused, or applying failed and was rolled back")), "envdoctor fix --pin-cuda 12.6 --python ~/venvs/train --apply"))
@click.option("--pin-cuda", "pin_cuda", metavar="X.Y", help="Make torch, torchvision, torchaudio and the NVIDIA wheels one CUDA X.Y stack.")
@click.option("--torch", "torch_version", metavar="VERSION", help="With --pin-cuda: this torch release instead of the newest that fits.")
@click.option("--with", "with_packages", multiple=True, type=click.Choice(COMPANIONS), help="With --pin-cuda: also install this companion (default: only those installed).")
@click.option("--mixed-wheels", is_flag=True, help="Remove the NVIDIA wheel families nothing installed needs.")
@click.option("--threads", is_flag=True, help="Print the thread-pool variables to export for this machine's usable CPUs.")
@click.option("--rollback", "rollback", metavar="RECORD", help="Restore the environment recorded by an earlier --apply (its folder or record.json) into the --python it was recorded from.")
@click.option("--python", "python", metavar="PATH", help="Interpreter (or venv folder) to fix [default: this one].")
@click.option("--installer", "installer_name", type=click.Choice(installers.INSTALLERS), help="Installer to run [default: pip if the target has it, else uv].")
@click.option("--from", "from_report", metavar="REPORT.json", help="Plan for the facts recorded in a report (plan only).")
@click.option("--apply", "do_apply", is_flag=True, help="Carry the plan out (after recording the environment), verify it, roll back on failure.")
@click.option("--yes", is_flag=True, help="Do not ask before --apply or --rollback changes anything.")
@click.option("--force", is_flag=True, help="Plan even when the driver or the GPU cannot run the asked CUDA.")
@click.option("--wheels", metavar="DIR", help="With --pin-cuda: read other releases' metadata from the wheels in DIR instead of PyPI.")
@click.option("--offline", is_flag=True, help="With --pin-cuda: look nothing up and run no dry run; the plan says which versions it assumed.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sh"]), default="text", show_default=True, help="How to print the plan.")
@click.option("--json", "json_out", metavar="PATH|-", help="Also write the plan and its result as JSON.")
@click.option("--report-dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_REPORT_DIR, show_default=True, help="Where --apply records the environment.")
def fix(pin_cuda, torch_version, with_packages, mixed_wheels, threads, rollback, python, installer_name, from_report, do_apply, yes, force, wheels, offline, fmt, json_out, report_dir) -> int:
    """Plan a repair as numbered steps; with --apply, carry it out, verify it, and undo it on failure."""
    action = chosen_action(pin_cuda, mixed_wheels, threads, rollback)
    if (torch_version or with_packages or force or wheels or offline) and action != "pin-cuda":
        raise UsageError("--torch, --with, --force, --wheels and --offline go with --pin-cuda")
    if action == "rollback":
        return run_rollback(rollback, python, installer_name, yes, fmt, json_out)
    if do_apply and from_report:
        raise UsageError("--apply changes this machine; it cannot apply a plan made for a recorded report")
    if do_apply and action == "threads":
        raise UsageError("--threads changes no files; apply it with: eval \"$(envdoctor fix --threads --format sh)\"")
    facts, target = read_facts(action, python, from_report)
    request = Request(pin_cuda or "", torch_version, tuple(with_packages), force)
    plan, installer = planned(action, facts, target, installer_name, request, release_index(wheels, offline), from_report, offline)
    if fmt == "text" and json_out != STDOUT:
        click.echo(PlanRenderer(plan).terminal(), nl=False)
    if not do_apply:
        show(PlanRenderer(plan), fmt, json_out)
        if plan.applicable and fmt == "text" and json_out != STDOUT:
            click.echo("\nNothing was changed. Run again with --apply to carry out the plan.")
        return EXIT_FINDINGS if plan.blocked else EXIT_OK
    if plan.installer == "conda":
        raise UsageError("--apply records and rolls back pip and uv plans only; run this plan's conda commands yourself (`conda install --revision N` undoes them)")
    confirm = applying.always if yes else prompt
    result = applying.apply(plan, installer, facts["target"].get("distributions", ()), report_dir, confirm, progress)
    show(PlanRenderer(plan, result), fmt, json_out)
    return EXIT_OK if result.outcome.succeeded else EXIT_FINDINGS
