"""`envdoctor diff A.json B.json`: what differs between two environments, most likely culprit first."""

from __future__ import annotations

from pathlib import Path

import click

from envdoctor import engine
from envdoctor.cli import EXIT_FINDINGS, EXIT_OK
from envdoctor.cli.helptext import epilog
from envdoctor.cli.options import emit, output_options
from envdoctor.compare import compare
from envdoctor.compare.render import ComparisonRenderer


@click.command(epilog=epilog((("0", "nothing that matters differs"), ("1", "a difference that matters, or a finding on one side only")), "envdoctor diff reports/works.json reports/crashes.json"))
@click.argument("report_a", metavar="A.json", type=click.Path(path_type=Path))
@click.argument("report_b", metavar="B.json", type=click.Path(path_type=Path))
@output_options
@click.option("-v", "--verbose", is_flag=True, help="List every other difference instead of counting them.")
def diff(report_a, report_b, json_out, markdown_out, verbose) -> int:
    """Compare two reports: what could make a run that works on A crash on B."""
    comparison = compare(engine.read_report(report_a), engine.read_report(report_b), str(report_a), str(report_b))
    emit(ComparisonRenderer(comparison), json_out, markdown_out, verbose)
    return EXIT_FINDINGS if comparison.matters else EXIT_OK
