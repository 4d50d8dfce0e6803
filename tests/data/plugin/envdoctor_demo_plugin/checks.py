"""Checks registered through the `envdoctor.checks` entry-point group."""

from envdoctor.checks import check
from envdoctor.model import Finding, Remedy, Severity


@check("lab.python-version", "The lab's training images use Python 3.11", requires=("target",))
def python_version(facts):
    version = facts["target"]["python"]["version"]
    yield Finding(
        id="lab.python-version",
        severity=Severity.INFO,
        title=f"Python {version} seen by the lab plugin",
        remedies=(Remedy("Use the lab image.", "docker pull lab/train:py311"),),
    )


@check("lab.always-crashes", "A check with a bug in it")
def always_crashes(facts):
    raise RuntimeError("bug in the lab plugin")
