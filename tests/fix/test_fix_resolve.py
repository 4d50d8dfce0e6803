"""A pin-cuda plan checked by pip itself before anything changes (`pip install --dry-run --report`),
against a local index of tiny wheels with real metadata: no network is needed."""

from __future__ import annotations

import sys

import pytest

from envdoctor.fix import dry_run
from envdoctor.fix.plan import Plan, Step, StepKind
from helpers.local_wheels import write_wheel

pytestmark = pytest.mark.slow


@pytest.fixture
def local_index(tmp_path, monkeypatch):
    folder = tmp_path / "wheels"
    write_wheel(folder, "rl-kit", "1.0", ["rl-core<2,>=1"])
    write_wheel(folder, "rl-core", "1.4")
    write_wheel(folder, "rl-core", "2.0")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.delenv("PIP_CONSTRAINT", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    return folder


def install_plan(*requirements: str) -> Plan:
    step = Step(StepKind.INSTALL, "Install", "why", argv=(sys.executable, "-m", "pip", "install", *requirements))
    return Plan("pin-cuda", "a plan", sys.executable, "pip", (step,))


def test_pip_dry_run_lists_every_distribution_it_would_install(local_index):
    plan = dry_run.resolved(install_plan("rl-kit==1.0"), "24.0")
    assert plan.resolved == ("rl-core==1.4", "rl-kit==1.0")
    assert plan.refusal is None and any(n.startswith("pip's dry run resolved the install line") for n in plan.notes)


def test_a_line_pip_cannot_resolve_refuses_the_plan_before_anything_runs(local_index):
    plan = dry_run.resolved(install_plan("rl-kit==1.0", "rl-core==2.0"), "24.0")
    assert plan.blocked and plan.steps == () and "pip finds no set of versions" in plan.refusal


def test_without_a_pip_that_has_reports_the_plan_says_what_it_assumed(local_index):
    plan = dry_run.resolved(install_plan("rl-kit==1.0"), "21.3")
    assert plan.resolved == () and plan.notes[-1].startswith("not resolved by pip (pip 21.3 has no --dry-run --report")
    assert "versions assumed:" in plan.notes[-1]
