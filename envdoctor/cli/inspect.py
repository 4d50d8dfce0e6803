"""`envdoctor inspect` and `envdoctor sanitize`: SB3 model files, read statically and made loadable."""

from __future__ import annotations

import math
from pathlib import Path

import click

from envdoctor import engine
from envdoctor.cli import EXIT_FINDINGS, EXIT_OK
from envdoctor.cli.helptext import FAIL_ON_EXITS, epilog
from envdoctor.cli.options import emit, output_options, resolve_python
from envdoctor.errors import UsageError
from envdoctor.escape import escape_control
from envdoctor.model import Severity
from envdoctor.sb3.render import ModelsRenderer
from envdoctor.sb3.sanitize import sanitize


@click.command("inspect", epilog=epilog(FAIL_ON_EXITS, "envdoctor inspect downloaded_ppo.zip --python ~/venvs/train"))
@click.argument("model", metavar="MODEL.zip")
@click.option("--python", "python", metavar="PATH", help="Judge the model for this interpreter (or venv folder) [default: this one].")
@output_options
@click.option("--fail-on", type=click.Choice(["info", "warning", "error"]), default="error", show_default=True, help="Exit 1 on findings at or above this severity.")
@click.option("-v", "--verbose", is_flag=True, help="Show each finding's evidence.")
def inspect_command(model, python, json_out, markdown_out, fail_on, verbose) -> int:
    """Read an SB3 model zip without running it: who saved it, what each pickled entry holds, and what
    loading it here would do."""
    document = engine.inspect_models(resolve_python(python), [model])
    emit(ModelsRenderer(document), json_out, markdown_out, verbose)
    return EXIT_FINDINGS if engine.at_or_above(document.report.findings, Severity(fail_on)) else EXIT_OK


def schedule_number(ctx, param, value):
    """A schedule value SB3 can train with: finite and not negative (a range check lets NaN through)."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise UsageError(f"{param.opts[0]} {value}: give a finite number of 0 or more")
    return value


@click.command("sanitize", epilog=epilog((("0", "the copy was written"),), "envdoctor sanitize ppo_py312.zip -o ppo_any_python.zip"))
@click.argument("model", metavar="MODEL.zip")
@click.option("-o", "--output", required=True, metavar="OUT.zip", help="Where to write the sanitised copy.")
@click.option("--learning-rate", type=float, callback=schedule_number, help="Use this learning rate instead of the one found in the file.")
@click.option("--clip-range", type=float, callback=schedule_number, help="Use this clip range instead of the one found in the file.")
@click.option("--clip-range-vf", type=float, callback=schedule_number, help="Use this value-function clip range instead of the one found in the file.")
@click.option("--force", is_flag=True, help="Replace OUT.zip if it exists.")
def sanitize_command(model, output, learning_rate, clip_range, clip_range_vf, force) -> int:
    """Write a copy of MODEL.zip that holds no pickle of it: data written again by envdoctor, schedules with
    code as plain numbers, weights only when torch's weights_only loader accepts them."""
    overrides = {"learning_rate": learning_rate, "clip_range": clip_range, "clip_range_vf": clip_range_vf}
    result = sanitize(Path(model), Path(output), overrides, force=force)
    if not result.replaced:
        click.echo("Nothing to replace: no schedule holds code, is corrupt or needs a foreign module.")
    for key, plan in result.replaced.items():
        click.echo(f"{key}: {escape_control(plan['was'], multiline=False)} → {plan['value']!r} ({plan['source']})")
    for key, why in result.dropped.items():
        click.echo(f"dropped {escape_control(key, multiline=False)}: {why}")
    ignored = [f"--{k.replace('_', '-')}" for k, v in overrides.items() if v is not None and k not in result.replaced]
    if ignored:
        click.echo(f"Ignored {', '.join(ignored)}: that schedule holds no code and was kept.")
    click.echo(
        f"Wrote {result.output}: {len(result.rewritten)} pickled entries written again by envdoctor (no pickle copied), "
        f"{len(result.copied)} members copied ({', '.join(result.copied) or 'none'})."
    )
    return EXIT_OK
