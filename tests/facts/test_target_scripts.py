"""Scripts that run under the diagnosed interpreter: stdlib only, Python 3.8 syntax, and really run there."""

import ast
import json
import subprocess
import sys

import pytest

from envdoctor.target import SCRIPTS
from helpers.pythons import python_or_skip

TARGET_SCRIPTS = sorted(p for p in SCRIPTS.glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("script", TARGET_SCRIPTS, ids=lambda p: p.name)
def test_parses_as_python_3_8(script):
    ast.parse(script.read_text(), filename=str(script), feature_version=(3, 8))


@pytest.mark.parametrize("script", TARGET_SCRIPTS, ids=lambda p: p.name)
def test_imports_no_envdoctor(script):
    tree = ast.parse(script.read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert "envdoctor" not in imported


@pytest.mark.parametrize("minor", ["3.8", "3.13"])
def test_facts_script_runs_under_another_python(minor):
    python = python_or_skip(minor)
    source = (SCRIPTS / "facts.py").read_text()
    completed = subprocess.run([python, "-c", source], capture_output=True, text=True, check=True)
    facts = json.loads(completed.stdout)
    assert facts["python"]["version"].startswith(minor + ".")
    assert facts["python"]["executable"] == python
    assert any(d["name"].lower() == "pip" for d in facts["distributions"])


def test_facts_script_reads_torch_build_without_importing_it():
    source = (SCRIPTS / "facts.py").read_text()
    probe = source + "\nimport sys\nassert 'torch' not in sys.modules\n"
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    build = json.loads(completed.stdout)["torch_build"]
    assert build["version"].startswith("2.13.0")
    assert build["cuda"] is None  # the CPU wheel


def test_importing_the_ladder_runs_no_probe():
    """The doctor imports target/ladder.py for its stage table: the import must start nothing, load
    no numpy or torch, and leave stdout where it was."""
    code = "import sys, envdoctor.target.ladder as ladder; print(len(ladder.STAGES), ladder.EVENTS, sorted({'numpy', 'torch'} & set(sys.modules)))"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert (completed.stdout, completed.stderr) == ("13 None []\n", "")
