"""The diagnosis pipeline: gather facts once, judge them with every selected check, make a report.

Nothing here prints; the CLI decides what is shown and how the run exits.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from envdoctor import __version__, codec, redact
from envdoctor.proc import children
from envdoctor.catalogue import Catalogue, find
from envdoctor.checks.runner import run_checks
from envdoctor.collect import ON_DEMAND, CollectContext, gather, timed
from envdoctor.collect.imports import ImportOptions
from envdoctor.collect.imports import collect as collect_imports
from envdoctor.diagnosis.judge import link_and_rank
from envdoctor.document import Document
from envdoctor.errors import ReportReadError, TargetReadError
from envdoctor.files import read_json
from envdoctor.model import SCHEMA_VERSION, Cause, CheckRun, Finding, Remedy, Report, Severity
from envdoctor.probe.probing import run_probe
from envdoctor.probe.result import ProbeResult
from envdoctor.probe.runner import ProbeOptions


REPORT_SIZE_LIMIT = 64 * 2**20  # a real report is tens of kilobytes; /dev/zero must not be read forever
REPORT_DEPTH_LIMIT = 100  # a real report nests about ten levels; readers and renderers recurse


@dataclass(frozen=True)
class Selection:
    """Which checks to run: ids or whole domains (`--only threads`, `--skip wsl.kernel`)."""

    only: Tuple[str, ...] = ()
    skip: Tuple[str, ...] = ()


def plugin_failure(name: str, error: str) -> Finding:
    return Finding(
        id="doctor.plugin-failed",
        severity=Severity.WARNING,
        title=f"The check plugin {name!r} could not be loaded; its checks did not run",
        explanation=error,
        remedies=(Remedy("Reinstall or update the plugin that provides this entry point, or uninstall it."),),
    )


class Judgement(NamedTuple):
    """What judging gave: the findings, each check's and linking rule's run, the ranked diagnosis, the time (ms)."""

    findings: List[Finding]
    runs: List[CheckRun]
    diagnosis: Tuple[Cause, ...]
    judge_ms: float


def judge(facts: Mapping, probe: Optional[Mapping], selection: Selection, run: Optional[Mapping] = None, catalogue: Optional[Catalogue] = None) -> Judgement:
    """Findings and check records for `facts` (the probe's result is judged as the `probe` facts, what
    `envdoctor run` saw as the `run` facts) by the rules of `catalogue` (this installation's when None)
    that `selection` selects: the checks, plugins and policy rules first, then the links over all
    their findings into a diagnosis."""
    started = time.perf_counter()
    rules = (find() if catalogue is None else catalogue).select(selection.only, selection.skip)
    judged = {**facts, "probe": probe, "run": run}
    findings, runs = run_checks(rules.first_pass, judged)
    findings = [plugin_failure(n, e) for n, e in rules.failures] + findings
    diagnosis, crashed, link_runs = link_and_rank(judged, findings, rules.links)
    findings = sorted(findings + crashed, key=lambda f: -f.severity.rank)
    return Judgement(findings, runs + link_runs, diagnosis, (time.perf_counter() - started) * 1000)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def make_safe(report: Report, environs: Sequence[Mapping[str, str]], redact_paths: bool) -> Document:
    """The report as it leaves: encoded once, with the secret values of every environment in `environs`
    removed and, unless opted out, the home directory as `~`; the views draw the Report read back from
    that same data."""
    home = redact.home_directory() if redact_paths else ""
    data = codec.encode(report, text=redact.cleaner(redact.secret_values(*environs), home))
    return Document(codec.decode(Report, data), data)


def probed_and_gathered(
    python: str,
    environ: Mapping[str, str],
    probe: Optional[ProbeOptions],
    imports: Optional[ImportOptions] = None,
    selection: Selection = Selection(),
    catalogue: Optional[Catalogue] = None,
    gathering: Optional["Future[Tuple[dict, dict]]"] = None,
) -> Tuple[Optional[dict], dict, dict]:
    """The probe ladder and the import checks run alongside the collectors: they are the long part, the
    collectors mostly wait on files and child processes, which is also when the rules are found
    (this installation's when `catalogue` is None) and the sections only they need (ON_DEMAND) are
    gathered for the rules `selection` selects. `gathering` is the collectors' work when a command
    began it already (collect.begun) for this interpreter and environment. A Ctrl-C ends their children."""
    context = CollectContext(python=python, environ=environ)
    with children.children_end_on_interrupt(), ThreadPoolExecutor(max_workers=4) as pool:
        started = time.perf_counter()
        probing = pool.submit(run_probe, python, environ, probe) if probe else None
        importing = pool.submit(timed, lambda ctx: collect_imports(ctx.python, ctx.environ, imports), context) if imports else None
        gathering = gathering or pool.submit(gather, context)
        rules = (find() if catalogue is None else catalogue).select(selection.only, selection.skip)
        wanted = pool.submit(gather, context, sorted(ON_DEMAND & rules.requires()))
        facts, timings = gathering.result()
        more_facts, more_timings = wanted.result()
        facts.update(more_facts)
        timings.update(more_timings)
        result = probing.result() if probing else None
        if importing:
            facts["imports"], timings["collect.imports"] = importing.result()
    if probing:
        timings["probe"] = (time.perf_counter() - started) * 1000
    return result, facts, timings


def diagnose(
    python: str,
    selection: Selection,
    environ: Optional[Mapping[str, str]] = None,
    redact_paths: bool = True,
    probe: Optional[ProbeOptions] = None,
    models: Sequence[str] = (),
    imports: Optional[ImportOptions] = None,
    run: Optional[Mapping] = None,
    gathered: Optional["Future[Tuple[dict, dict]]"] = None,
    catalogue: Optional[Catalogue] = None,
    secrets_also_in: Sequence[Mapping[str, str]] = (),
) -> Document:
    """Collect this machine's facts for the interpreter `python`, run the probe ladder unless `probe`
    is None and import every installed module unless `imports` is None, inspect the SB3 model files
    `models` statically, and judge them, with what `envdoctor run` saw of a command (`run`) where there is one.
    `gathered` is the collectors' work a command began already for this interpreter and environment (collect.begun);
    `catalogue` the rules to judge with (this installation's when None); the secrets of `environ` and of
    `secrets_also_in` are removed from the report."""
    environ = dict(os.environ if environ is None else environ)
    probe_result, facts, timings = probed_and_gathered(python, environ, probe, imports, selection, catalogue, gathered)
    target = facts.get("target")
    if run is None and isinstance(target, Mapping) and "error" in target:
        raise TargetReadError(f"cannot read the interpreter {python}: {target['error']}")
    if models:
        facts["models"], timings["collect.models"] = inspected(python, models)
    return judged_report(python, facts, probe_result, selection, timings, (environ, *secrets_also_in), redact_paths, run, catalogue)


def inspect_models(python: str, models: Sequence[str], environ: Optional[Mapping[str, str]] = None) -> Document:
    """A report on SB3 model files alone (`envdoctor inspect`): their forensics judged by the sb3 checks."""
    environ = dict(os.environ if environ is None else environ)
    facts, inspect_ms = inspected(python, models)
    return judged_report(python, {"models": facts}, None, Selection(only=("sb3", "diagnosis")), {"inspect": inspect_ms}, (environ,))


def inspected(python: str, models: Sequence[str]) -> Tuple[dict, float]:
    """The models' static forensics for the target `python`, and how long reading them took (ms)."""
    from envdoctor.sb3.models_section import models_facts  # the pickle reader is only needed when models are given

    started = time.perf_counter()
    facts = models_facts(python, models)
    return facts, (time.perf_counter() - started) * 1000


def judged_report(
    python: str,
    facts: dict,
    probe_result: Optional[dict],
    selection: Selection,
    timings: Mapping[str, float],
    environs: Sequence[Mapping[str, str]],
    redact_paths: bool = True,
    run: Optional[Mapping] = None,
    catalogue: Optional[Catalogue] = None,
) -> Document:
    """Judge the facts (and the probe's result, and the command's run) into a report that is safe to
    publish, without the secrets of `environs`."""
    judged = judge(facts, probe_result, selection, run, catalogue)
    report = Report(
        tool_version=__version__,
        created=now(),
        target_python=python,
        facts=facts,
        findings=tuple(judged.findings),
        checks=tuple(judged.runs),
        probe=probe_result,
        timings_ms={**timings, "judge": judged.judge_ms},
        run=run,
        diagnosis=judged.diagnosis,
    )
    return make_safe(report, environs, redact_paths)


def read_report(path: Path) -> Report:
    """A recorded report, refused in one line naming the file when it is not a regular file, larger
    than any report, nested deeper than one, of another schema major, or of the wrong shape inside."""
    from envdoctor.schema import validate  # jsonschema is only needed when reading reports

    data = parsed_json(path)
    validate(data, source=str(path))
    try:
        report = codec.decode(Report, data)
        if report.probe is not None:
            codec.decode(ProbeResult, report.probe)
    except (TypeError, KeyError, ValueError, AttributeError, RecursionError) as error:
        raise ReportReadError(f"{path} is not a usable envdoctor report: {type(error).__name__}: {error}") from None
    return report


def parsed_json(path: Path):
    """The JSON document in the regular file `path`, read no further than REPORT_SIZE_LIMIT and
    nested no deeper than REPORT_DEPTH_LIMIT: a FIFO, a device or a folder is refused, never waited on."""
    return read_json(path, REPORT_SIZE_LIMIT, "an envdoctor report", ReportReadError, depth=REPORT_DEPTH_LIMIT)


def rejudge(report: Report, selection: Selection, catalogue: Optional[Catalogue] = None) -> Report:
    """A recorded report judged again by the current rules (`catalogue`, this installation's when None);
    its facts and probe are kept as recorded."""
    judged = judge(report.facts, report.probe, selection, report.run, catalogue)
    return replace(
        report,
        tool_version=__version__,
        findings=tuple(judged.findings),
        checks=tuple(judged.runs),
        diagnosis=judged.diagnosis,
        timings_ms={**report.timings_ms, "judge": judged.judge_ms},
        schema_version=SCHEMA_VERSION,
    )


def at_or_above(findings: Iterable[Finding], threshold: Severity) -> List[Finding]:
    return [f for f in findings if f.severity >= threshold]
