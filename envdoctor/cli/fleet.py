"""`envdoctor fleet`: check every node of a cluster and show the odd ones out."""

from __future__ import annotations

import sys
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Optional

import click

from envdoctor.cli import EXIT_FINDINGS, EXIT_OK
from envdoctor.cli.helptext import epilog
from envdoctor.cli.options import emit, output_options
from envdoctor.cli.params import DAY_S, Seconds
from envdoctor.cli.stdout import note
from envdoctor.errors import UsageError
from envdoctor.escape import escape_control
from envdoctor.fleet.aggregate import aggregate
from envdoctor.fleet.nodes import NodeJudge, summarize
from envdoctor.fleet.render import FleetRenderer
from envdoctor.fleet.sources import collect_from_ray, read_reports
from envdoctor.fleet.stream import mapped

DEFAULT_REPORT_ROOT = Path("reports")


def default_report_dir() -> Path:
    return DEFAULT_REPORT_ROOT / f"fleet-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


class AnswerProgress:
    """Nodes answering, on stderr: one line redrawn in place on a terminal, else one line per answer
    with the running count (a log keeps them all)."""

    def __init__(self) -> None:
        self.live = sys.stderr is not None and sys.stderr.isatty()
        self.drawn = False

    def __call__(self, answered: int, total: int, node: str) -> None:
        line = f"envdoctor fleet: {answered}/{total} nodes answered ({escape_control(node, multiline=False)[:80]})"
        if not self.live:
            note(line)
            return
        sys.stderr.write(f"\r{line}\x1b[K")
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            note("")


def policy_judge(policy_file: Optional[str]) -> Optional[NodeJudge]:
    """The judge of the policy named by --policy, its file read and validated before any node is."""
    if not policy_file:
        return None
    from envdoctor import policy

    return partial(policy.judge, policy.load(Path(policy_file)))


def nodes_from_ray(address, report_dir, python, probe, timeout) -> list:
    progress = AnswerProgress()
    try:
        return collect_from_ray(address, report_dir, python, probe, timeout, progress)
    finally:
        progress.close()


@click.command(epilog=epilog((("0", "every node agrees with the majority"), ("1", "a node deviates from the majority, breaks the policy or has no report")), "envdoctor fleet --reports /shared/envdoctor-reports/"))
@click.argument("more_reports", nargs=-1, metavar="[FILES]...", type=click.Path(path_type=Path))
@click.option("--address", metavar="ADDR", help="Ray cluster to check, as for ray.init (e.g. auto, HOST:6379, ray://HOST:10001).")
@click.option("--reports", "reports_dir", metavar="DIR|FILE", type=click.Path(path_type=Path),
              help="Aggregate the *.json reports in DIR (or FILE and the FILES after it) instead (Slurm, Kubernetes, ...).")
@click.option("--python", "python", metavar="PATH", help="Interpreter to diagnose on every node [default: the one running Ray's workers].")
@click.option("--no-probe", is_flag=True, help="Do not run the probe ladder on the nodes.")
@click.option("--timeout", type=Seconds(1, DAY_S), default=300, show_default=True,
              help="Seconds each node's check may take; a node without an answer 30 s later is listed as not answering.")
@click.option("--report-dir", type=click.Path(file_okay=False, path_type=Path), help="Where to save the nodes' reports [default: ./reports/fleet-STAMP].")
@click.option("--policy", "policy_file", metavar="POLICY.toml", help="Also judge every node against the team's rules in this policy file; list the nodes that break them.")
@click.option("--workers", type=click.IntRange(1, 256), metavar="N", help="Processes reading the reports [default: the usable CPUs; 1 reads them in this process].")
@output_options
@click.option("-v", "--verbose", is_flag=True, help="List every node with its deviations and why.")
def fleet(more_reports, address, reports_dir, python, no_probe, timeout, report_dir, policy_file, workers, json_out, markdown_out, verbose) -> int:
    """Run `check` on every node of a Ray cluster (or read a folder of reports) and show the nodes
    that deviate from the majority, grouped by what differs."""
    if more_reports and not reports_dir:
        raise UsageError(f"{more_reports[0]}: report files are read with --reports (envdoctor fleet --reports FILE FILES...)")
    if bool(address) == bool(reports_dir):
        raise UsageError("give exactly one of --address (a Ray cluster) or --reports DIR (reports gathered otherwise)")
    if reports_dir and (python or report_dir or no_probe):
        raise UsageError("--python, --no-probe and --report-dir apply to --address only")
    judge = policy_judge(policy_file)
    if address:
        report_dir = report_dir or default_report_dir()
        sources = nodes_from_ray(address, report_dir, python, not no_probe, timeout)
    else:
        sources = read_reports([reports_dir, *more_reports])
    view = aggregate(mapped(partial(summarize, judge=judge), sources, workers), str(report_dir) if report_dir else None, workers)
    emit(FleetRenderer(view), json_out, markdown_out, verbose)
    return EXIT_FINDINGS if view.deviating else EXIT_OK
