"""`envdoctor inspect` and `envdoctor sanitize`: SB3 model files, read statically and made loadable."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import click
from rich.console import Console

from envdoctor import __version__, engine
from envdoctor.cli import EXIT_FINDINGS, EXIT_OK, cli
from envdoctor.cli.options import STDOUT, output_options, resolve_python, write_output
from envdoctor.model import Report, Severity
from envdoctor.render import json as json_renderer
from envdoctor.render import markdown as markdown_renderer
from envdoctor.render import summary_line
from envdoctor.render.terminal import finding_block
from envdoctor.sb3 import render
from envdoctor.sb3.facts import models_facts
from envdoctor.sb3.sanitize import sanitize


def inspection_report(model: str, python: str) -> Report:
    """A report whose facts are the model's forensics and whose findings are the sb3 checks'."""
    started = time.perf_counter()
    facts = {"models": models_facts(python, [model])}
    inspect_ms = (time.perf_counter() - started) * 1000
    findings, runs, judge_ms = engine.judge(facts, None, engine.Selection(only=("sb3",)))
    report = Report(
        tool_version=__version__,
        created=engine.now(),
        target_python=python,
        facts=facts,
        findings=tuple(findings),
        checks=tuple(runs),
        timings_ms={"inspect": inspect_ms, "judge": judge_ms},
    )
    return engine.make_safe(report, os.environ, redact_paths=True)


def terminal_text(report: Report, verbose: bool) -> str:
    models = report.facts["models"]
    buffer = io.StringIO()
    console = Console(file=buffer, no_color=True, width=110, highlight=False, emoji=False)
    for model in models["files"]:
        console.out(render.text(model, models["target"]), end="")
    console.print()
    for finding in report.findings:
        finding_block(console, finding, verbose)
    console.print(summary_line(report))
    return buffer.getvalue()


def markdown_text(report: Report) -> str:
    models = report.facts["models"]
    parts = [render.markdown(model, models["target"]) for model in models["files"]]
    parts += [markdown_renderer.finding_section(f) for f in report.findings]
    return "\n".join(parts)


@cli.command("inspect")
@click.argument("model", metavar="MODEL.zip")
@click.option("--python", "python", metavar="PATH", help="Judge the model for this interpreter (or venv folder) [default: this one].")
@output_options
@click.option("--fail-on", type=click.Choice(["info", "warning", "error"]), default="error", show_default=True, help="Exit 1 on findings at or above this severity.")
@click.option("-v", "--verbose", is_flag=True, help="Show each finding's evidence.")
def inspect_command(model, python, json_out, markdown_out, fail_on, verbose) -> int:
    """Read an SB3 model zip without running it: who saved it, what each pickled entry holds, and what
    loading it here would do."""
    report = inspection_report(model, resolve_python(python))
    if json_out:
        write_output(json_renderer.render(report), json_out)
    if markdown_out:
        write_output(markdown_text(report), markdown_out)
    if STDOUT not in (json_out, markdown_out):
        click.echo(terminal_text(report, verbose), nl=False)
    return EXIT_FINDINGS if engine.at_or_above(report.findings, Severity(fail_on)) else EXIT_OK


@cli.command("sanitize")
@click.argument("model", metavar="MODEL.zip")
@click.option("-o", "--output", required=True, metavar="OUT.zip", help="Where to write the sanitised copy.")
@click.option("--learning-rate", type=float, help="Use this learning rate instead of the one found in the file.")
@click.option("--clip-range", type=float, help="Use this clip range instead of the one found in the file.")
@click.option("--clip-range-vf", type=float, help="Use this value-function clip range instead of the one found in the file.")
@click.option("--force", is_flag=True, help="Replace OUT.zip if it exists.")
def sanitize_command(model, output, learning_rate, clip_range, clip_range_vf, force) -> int:
    """Write a copy of MODEL.zip whose pickled schedules are plain numbers, so it loads on any Python."""
    overrides = {"learning_rate": learning_rate, "clip_range": clip_range, "clip_range_vf": clip_range_vf}
    result = sanitize(Path(model), Path(output), overrides, force=force)
    if not result.replaced:
        click.echo("Nothing to replace: no schedule holds code, is corrupt or needs a foreign module.")
    for key, plan in result.replaced.items():
        click.echo(f"{key}: {plan['was']} → {plan['value']!r} ({plan['source']})")
    ignored = [f"--{k.replace('_', '-')}" for k, v in overrides.items() if v is not None and k not in result.replaced]
    if ignored:
        click.echo(f"Ignored {', '.join(ignored)}: that schedule holds no code and was kept.")
    click.echo(f"Wrote {result.output} ({len(result.copied)} other members copied unchanged).")
    return EXIT_OK
