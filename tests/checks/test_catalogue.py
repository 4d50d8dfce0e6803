"""One catalogue of every rule a report counts: `envdoctor checks` lists them, `--only`/`--skip` accept
each id and domain a report shows, and a catalogue handed to the engine is what judges."""

import sys

import pytest

from conftest import REPO
from envdoctor import engine
from envdoctor.catalogue import Catalogue, find
from envdoctor.checks import Check
from envdoctor.codec import encode
from envdoctor.model import Cause, Finding, Severity

REPORT = REPO / "tests" / "data" / "reports" / "h100-cu130.json"


def listed(envdoctor, *options):
    run = envdoctor("checks", *options)
    assert run.returncode == 0, run
    return [line.split()[0] for line in run.stdout.splitlines()]


def recorded_runs(envdoctor, *options):
    run = envdoctor("check", "--from", str(REPORT), "--json", "-", *options)
    assert run.returncode in (0, 1), run
    return [c["id"] for c in run.json()["checks"]]


def test_checks_lists_every_rule_the_report_counts(envdoctor):
    ids = listed(envdoctor)
    assert sorted(recorded_runs(envdoctor)) == ids
    assert {"wsl.kernel", "diagnosis.exception", "diagnosis.signal-meaning"} <= set(ids)


@pytest.mark.parametrize("only", ["diagnosis", "diagnosis.exception"])
def test_only_accepts_the_linking_rules_a_report_shows(envdoctor, only):
    ran = recorded_runs(envdoctor, "--only", only)
    assert ran and all(i == only or i.startswith(f"{only}.") for i in ran)


def test_skip_accepts_a_linking_rule_and_leaves_the_rest(envdoctor):
    ran = recorded_runs(envdoctor, "--skip", "diagnosis.exception")
    assert "diagnosis.exception" not in ran
    assert "diagnosis.signal-meaning" in ran and "wsl.kernel" in ran


def test_an_id_no_rule_has_is_still_refused_in_one_line(envdoctor):
    run = envdoctor("check", "--from", str(REPORT), "--only", "diagnosis.no-such-link")
    assert run.returncode == 2
    assert run.stderr == "envdoctor: error: --only: unknown check id or domain diagnosis.no-such-link (see `envdoctor checks`)\n"


def test_select_keeps_each_kind_and_the_plugins_that_failed():
    policy_rule = Check("policy.demo", "a policy rule", (), lambda facts: ())
    catalogue = Catalogue(checks=find().checks, policy=(policy_rule,), links=find().links, failures=(("broken", "ImportError: x"),))
    chosen = catalogue.select(only=("policy", "diagnosis"), skip=("diagnosis.exception",))
    assert chosen.checks == () and chosen.policy == (policy_rule,)
    assert [r.id for r in chosen.links] == [r.id for r in catalogue.links if r.id != "diagnosis.exception"]
    assert chosen.failures == catalogue.failures
    assert catalogue.unknown(["policy", "policy.demo", "wsl", "nothing.here"]) == ("nothing.here",)


def test_the_links_see_the_findings_of_the_policy_rules_in_the_first_pass():
    """The engine judges with the catalogue it is given, in two passes: a link reads what every rule of
    the first pass found, a policy's rules included."""
    breach = Finding(id="policy.demo", severity=Severity.ERROR, title="the team's rule is broken")
    seen = []

    def witness(facts):
        seen.extend(f.id for f in facts["findings"])
        return [Cause("policy.demo", "likely", "the policy's breach", (), None, "diagnosis.witness")]

    catalogue = Catalogue(policy=(Check("policy.demo", "a policy rule", (), lambda facts: [breach]),), links=(Check("diagnosis.witness", "sees pass 1", (), witness),))
    judged = engine.judge({}, None, engine.Selection(), catalogue=catalogue)
    assert seen == ["policy.demo"]
    assert [c.id for c in judged.diagnosis] == ["policy.demo"]
    assert [r.id for r in judged.runs] == ["policy.demo", "diagnosis.witness"]


@pytest.mark.slow
def test_free_space_is_measured_only_for_a_selected_rule_that_reads_it(tmp_path, monkeypatch):
    """No built-in check reads the disk section: measuring it (a child process) is left to `check`s
    whose selected rules require it, such as a site plugin's."""
    monkeypatch.chdir(tmp_path)
    reads_disk = Check("lab.free-space", "reads the disk section", ("disk",), lambda facts: ())
    catalogue = Catalogue(checks=find().checks, plugins=(reads_disk,))
    plain = engine.diagnose(sys.executable, engine.Selection(skip=("lab",)), catalogue=catalogue).report
    assert "disk" not in plain.facts and "collect.disk" not in plain.timings_ms
    measured = engine.diagnose(sys.executable, engine.Selection(only=("lab",)), catalogue=catalogue).report
    assert [folder["path"] for folder in measured.facts["disk"]["folders"]] == [str(tmp_path)]
    assert {"id": "lab.free-space", "status": "passed"}.items() <= encode(measured.checks[0]).items()
