"""The check command end to end: formats, saving, exit codes, bad input, redaction, --from and --python."""

import json
import os
import signal
import subprocess
import sys
import time

import jsonschema
import pytest

from conftest import findings_by_id, interruptible
from envdoctor.schema import report_schema

SECRETS = {
    "GITHUB_TOKEN": "ghp_s3cr3tGithubTokenValue0001",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYs3cr3t0002",
    "HF_TOKEN": "hf_s3cr3tHuggingFaceValue0003",
    "OPENAI_API_KEY": "sk-s3cr3tOpenAIValue0004",
    "DB_PASSWORD": "hunter2-s3cr3t-0005",
    "WANDB_API_KEY": "s3cr3tWandbValue0006",
    "CUDA_AUTH_TOKEN": "s3cr3tCudaTokenValue0007",
    "PYTHON_KEYRING_PASSWORD": "s3cr3tKeyringValue0008",
    "MY_SERVICE_CREDENTIALS": "s3cr3tCredentialValue0009",
    "SESSION_COOKIE": "s3cr3tCookieValue0010",
    "PRIVATE_KEY": "-----BEGIN s3cr3t PRIVATE KEY 0011-----",
    # a secret that also leaks into an ordinary, recorded variable
    "NEXUS_TOKEN": "s3cr3tLeakedIntoPath0012",
    "LD_LIBRARY_PATH": "/opt/s3cr3tLeakedIntoPath0012/lib",
}


def test_json_report_validates_against_the_shipped_schema(envdoctor):
    run = envdoctor("check", "--no-save", "--no-probe", "--json", "-")
    report = run.json()
    jsonschema.validate(report, report_schema())
    assert report["schema_version"].startswith("1.")
    assert {"system", "cpu", "memory", "environ", "target"} <= set(report["facts"])
    assert report["target_python"] == sys.executable


def test_check_saves_a_report_and_says_where(envdoctor, tmp_path):
    run = envdoctor("check", "--no-probe", child=True)  # the command's wiring in a real `python -m envdoctor`
    assert run.returncode in (0, 1), run
    saved = list((tmp_path / "reports").glob("envdoctor-*.json"))
    assert len(saved) == 1
    assert f"Report saved: reports/{saved[0].name}" in run.stderr
    jsonschema.validate(json.loads(saved[0].read_text()), report_schema())
    assert "[✓] WSL" in run.stdout


def test_report_names_never_collide(envdoctor, tmp_path):
    for _ in range(2):
        envdoctor("check", "--only", "wsl", "--report-dir", "out")
    assert len(list((tmp_path / "out").iterdir())) == 2


def test_markdown_is_ready_for_a_github_issue(envdoctor, tmp_path):
    run = envdoctor("check", "--no-save", "--no-probe", "--markdown", "-")
    assert run.stdout.startswith("## envdoctor report\n")
    assert "### Key facts" in run.stdout and "Full facts in the attached JSON report" in run.stdout
    assert "[✓]" not in run.stdout  # the terminal view does not mix into stdout


@pytest.mark.slow
def test_no_secret_value_reaches_any_output(envdoctor, tmp_path):
    run = envdoctor("check", "--json", "report.json", "--markdown", "report.md", "-v", env=SECRETS)
    assert run.returncode in (0, 1), run
    outputs = {
        "terminal": run.stdout + run.stderr,
        "json": (tmp_path / "report.json").read_text(),
        "markdown": (tmp_path / "report.md").read_text(),
        "saved": next((tmp_path / "reports").glob("*.json")).read_text(),
    }
    for name, value in SECRETS.items():
        if name == "LD_LIBRARY_PATH":
            continue
        for where, text in outputs.items():
            assert value not in text, f"{name} leaked into the {where} output"
    variables = json.loads(outputs["json"])["facts"]["environ"]["variables"]
    assert variables["CUDA_AUTH_TOKEN"] == "<redacted>"
    assert variables["LD_LIBRARY_PATH"] == "/opt/<redacted>/lib"


def test_a_secret_that_is_one_of_the_reports_own_words_is_redacted_where_it_is_a_value(envdoctor, tmp_path):
    """The report's keys and its verdict words (passed, warning, ...) are envdoctor's, not the
    environment's: a secret that happens to spell one is removed from what was recorded, and the
    report stays whole."""
    secrets = {"CUDA_AUTH_TOKEN": "passed", "WANDB_API_KEY": "warning", "HF_TOKEN": "confidence"}
    run = envdoctor("check", "--no-probe", "--json", "report.json", "--markdown", "report.md", env=secrets)
    assert run.returncode in (0, 1), run
    saved = json.loads(next((tmp_path / "reports").glob("*.json")).read_text())
    assert saved == json.loads((tmp_path / "report.json").read_text())
    assert {c["status"] for c in saved["checks"]} >= {"passed"}
    assert saved["facts"]["environ"]["variables"]["CUDA_AUTH_TOKEN"] == "<redacted>"


SPY_ON_THE_START = """
import sys
import envdoctor.collect as collect
real = collect.begun
def begun(ctx):
    print([name for name in ("envdoctor.engine", "envdoctor.catalogue", "envdoctor.diagnosis", "envdoctor.render.view", "rich") if name in sys.modules])
    return real(ctx)
collect.begun = begun
from envdoctor.cli import main
try:
    main(["check", "--no-probe", "--no-save", "--json", "report.json"])
except SystemExit as end:
    print("exit", end.code)
"""


def test_check_starts_the_collectors_before_it_loads_the_rules_and_the_views(tmp_path):
    run = subprocess.run([sys.executable, "-c", SPY_ON_THE_START], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.stdout.splitlines()[0] == "[]", run
    assert run.stdout.splitlines()[-1] in ("exit 0", "exit 1"), run
    assert json.loads((tmp_path / "report.json").read_text())["facts"]["target"]["python"]["executable"]


def test_home_is_shown_as_tilde_unless_no_redact(envdoctor):
    executable = os.path.abspath(sys.executable)  # as the doctor names it: pytest started as ../x/.venv-test/bin/python keeps the ".."
    home = os.path.dirname(os.path.dirname(os.path.dirname(executable)))  # the repository holding .venv
    redacted = envdoctor("check", "--no-save", "--only", "wsl", "--json", "-", env={"HOME": home}).json()
    assert redacted["facts"]["target"]["python"]["executable"].startswith("~/")
    kept = envdoctor("check", "--no-save", "--only", "wsl", "--no-redact", "--json", "-", env={"HOME": home}).json()
    assert kept["facts"]["target"]["python"]["executable"] == executable


def recorded_report(envdoctor, tmp_path, kernel_release):
    path = tmp_path / "recorded.json"
    envdoctor("check", "--no-save", "--no-probe", "--json", str(path))
    report = json.loads(path.read_text())
    report["facts"]["system"]["kernel_release"] = kernel_release
    report["facts"]["memory"].update(ram_total_bytes=64 * 2**30, swap_total_bytes=2**30, shm_total_bytes=2**33)
    path.write_text(json.dumps(report))
    return path


@pytest.mark.parametrize(
    "kernel, fail_on, expected",
    [
        ("4.4.0-19041-Microsoft", "error", 1),  # WSL1: an error
        ("5.15.153.1-microsoft-standard-WSL2", "error", 0),  # WSL2 without /dev/dxg recorded: a warning
        ("5.15.153.1-microsoft-standard-WSL2", "warning", 1),
        ("6.1.0-18-amd64", "info", 0),
    ],
)
def test_exit_code_follows_fail_on(envdoctor, tmp_path, kernel, fail_on, expected):
    path = recorded_report(envdoctor, tmp_path, kernel)
    run = envdoctor("check", "--from", str(path), "--only", "wsl,memory", "--fail-on", fail_on)
    assert run.returncode == expected, run


def test_from_rejudges_recorded_facts_and_keeps_them(envdoctor, tmp_path):
    path = recorded_report(envdoctor, tmp_path, "4.4.0-19041-Microsoft")
    report = envdoctor("check", "--from", str(path), "--json", "-").json()
    recorded = json.loads(path.read_text())
    assert report["facts"] == recorded["facts"]
    assert report["created"] == recorded["created"]
    assert findings_by_id(report)["wsl.kernel"][0]["severity"] == "error"
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--from", "missing.json"], "cannot read missing.json"),
        (["--from", "garbage.json"], "garbage.json is not JSON"),
        (["--from", "future.json"], "uses report schema 2.0; this envdoctor reads 1.x"),
        (["--from", "broken.json"], "is not a valid envdoctor report at findings/0"),
        (["--from", "/dev/zero"], "/dev/zero is not a regular file"),
        (["--python", "/nonexistent/python3"], "no such interpreter"),
        (["--skip", "wsl.kernal"], "unknown check id or domain wsl.kernal"),
        (["--fail-on", "fatal"], "Invalid value for '--fail-on'"),
        (["--no-save", "--report-dir", "x"], "exclude each other"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(envdoctor, tmp_path, args, message):
    (tmp_path / "garbage.json").write_text("{not json")
    (tmp_path / "future.json").write_text(json.dumps({"schema_version": "2.0"}))
    (tmp_path / "broken.json").write_text(
        json.dumps({"schema_version": "1.0", "tool": {"name": "envdoctor", "version": "0"}, "created": "x", "target_python": "p",
                    "facts": {}, "findings": [{"id": "x"}], "checks": [], "probe": None, "timings_ms": {}})
    )
    run = envdoctor("check", *args)
    assert run.returncode == 2, run
    assert message in run.stderr
    assert "Traceback" not in run.stderr
    assert run.stdout == ""


@pytest.mark.slow
def test_python_option_diagnoses_another_real_venv(envdoctor, venvs):
    python = venvs.get("with-six", ["six==1.16.0"])
    report = envdoctor("check", "--no-save", "--only", "wsl", "--python", str(python), "--json", "-").json()
    target = report["facts"]["target"]
    assert target["python"]["is_venv"] is True
    names = {d["name"].lower() for d in target["distributions"]}
    assert "six" in names
    assert "torch" not in names
    assert report["target_python"] == str(python)


@pytest.mark.slow
def test_python_option_takes_a_venv_folder(envdoctor, venvs):
    python = venvs.get("with-six", ["six==1.16.0"])
    report = envdoctor("check", "--no-save", "--only", "wsl", "--python", str(python.parent.parent), "--json", "-").json()
    assert report["target_python"] == str(python)


def test_checks_lists_the_catalogue(envdoctor):
    run = envdoctor("checks", child=True)  # the command's wiring in a real `python -m envdoctor`
    assert run.returncode == 0
    ids = [line.split()[0] for line in run.stdout.splitlines()]
    assert {"wsl.kernel", "cpu.missing-instructions", "threads.oversubscribed", "memory.shm-small"} <= set(ids)
    assert ids == sorted(ids)


def test_python_dash_m_and_console_script_agree(envdoctor):
    script = os.path.join(os.path.dirname(sys.executable), "envdoctor")
    version = subprocess.run([script, "--version"], capture_output=True, text=True).stdout
    assert version == envdoctor("--version", child=True).stdout  # the subject is `python -m envdoctor` itself
    assert "envdoctor, version" in version


INTERRUPTED_IMPORT = """
import runpy, sys
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "envdoctor.cli":
            raise KeyboardInterrupt  # Ctrl-C while the CLI is being imported
sys.meta_path.insert(0, Interrupt())
sys.argv = ["envdoctor", "check", "--no-save"]
runpy.run_module("envdoctor", run_name="__main__")
"""


def test_ctrl_c_while_the_cli_is_imported_exits_130_without_a_traceback(tmp_path):
    """On a loaded machine the imports take seconds: a Ctrl-C then lands there, not in click's handling."""
    result = subprocess.run([sys.executable, "-c", INTERRUPTED_IMPORT], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 130, result
    assert result.stderr == "Interrupted.\n"


@pytest.mark.slow
def test_ctrl_c_exits_130_without_a_traceback(tmp_path):
    """A real SIGINT to a running `check` (the ladder is slow enough to be caught in)."""
    process = subprocess.Popen([sys.executable, "-m", "envdoctor", "check", "--no-save"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    time.sleep(2.0)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130
    assert "Interrupted." in stderr
    assert "Traceback" not in stderr


def test_checks_are_listed_in_the_registry_order_whichever_module_was_imported_first():
    """A policy imports some check modules before the registry loads them all: the order of the
    listing (and of findings of one severity) must not depend on that."""
    program = (
        "import envdoctor.checks.cuda, envdoctor.checks.threads\n"
        "from envdoctor.checks.registry import BUILTIN_MODULES, load_checks\n"
        "print([BUILTIN_MODULES.index(c.function.__module__) for c in load_checks()[0] if c.function.__module__ in BUILTIN_MODULES])\n"
    )
    ranks = json.loads(subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True).stdout)
    assert ranks == sorted(ranks) and len(set(ranks)) > 5


def venv_with_pth(folder, line: str):
    """A real venv whose site-packages holds a .pth file with `line`, which site runs at every start."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    [site] = folder.glob("lib/python*/site-packages")
    (site / "noise.pth").write_text(line + "\n")
    return folder / "bin" / "python"


@pytest.mark.parametrize("line", [
    'import sys; sys.stdout.write("hello from a .pth file")',  # no newline: it would run into the facts on stdout
    'import sys; print("{\\"not\\": \\"the facts\\"}")',
])
def test_start_up_noise_on_stdout_does_not_hide_the_target(envdoctor, tmp_path, line):
    python = venv_with_pth(tmp_path / "noisy", line)
    run = envdoctor("check", "--python", str(python), "--no-probe", "--no-save", "--only", "doctor", "--json", "-")
    assert run.returncode == 0, run
    target = run.json()["facts"]["target"]
    assert "error" not in target and target["python"]["is_venv"] is True
    assert {c["status"] for c in run.json()["checks"]} == {"passed"} or "doctor.no-ml-stack" in findings_by_id(run.json())


def test_a_target_that_cannot_be_read_is_exit_2_with_the_reason(envdoctor, tmp_path):
    """A project folder named like a standard module (shutil/: the facts script imports it, the
    interpreter question does not) put first on the venv's sys.path by a .pth line: the interpreter
    starts, but the facts script cannot run there."""
    (tmp_path / "project" / "shutil").mkdir(parents=True)
    (tmp_path / "project" / "shutil" / "__init__.py").write_text("raise ImportError('this is the project, not the standard shutil')\n")
    python = venv_with_pth(tmp_path / "shadowed", f"import sys; sys.path.insert(0, {str(tmp_path / 'project')!r})")
    run = envdoctor("check", "--python", str(python), "--no-probe", "--no-save", "--json", "-")
    assert run.returncode == 2, run
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert f"cannot read the interpreter {python}" in run.stderr and "this is the project" in run.stderr


def test_an_interpreter_that_fails_to_start_is_named_by_its_exception(envdoctor, tmp_path):
    """json/ shadowed: the interpreter question itself fails; the error line is the exception, not
    the traceback's first line."""
    (tmp_path / "project" / "json").mkdir(parents=True)
    (tmp_path / "project" / "json" / "__init__.py").write_text("raise ImportError('this is the project, not the standard json')\n")
    python = venv_with_pth(tmp_path / "shadowed", f"import sys; sys.path.insert(0, {str(tmp_path / 'project')!r})")
    run = envdoctor("check", "--python", str(python), "--no-probe", "--no-save", "--json", "-")
    assert run.returncode == 2, run
    assert run.stderr.rstrip("\n").endswith("does not start as Python (exited with 1): ImportError: this is the project, not the standard json"), run.stderr
